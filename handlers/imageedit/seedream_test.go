package imageedit

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
)

// An edit becomes the Seedream generation Ark documents: image a string for one URL and a list
// for several, n above 1 a sequential set of at most n, the default size written out, seed and
// watermark mapped, and fields Seedream does not have left out.
func TestToSeedream(t *testing.T) {
	for _, tc := range []struct{ name, edit, want string }{
		{"one image", `{"model":"m","prompt":"p","images":[{"image_url":"https://a.example/1.png"}]}`,
			`{"model":"up","prompt":"p","image":"https://a.example/1.png","size":"2048x2048","response_format":"url","sequential_image_generation":"disabled"}`},
		{"two images, n 3, seed, watermark, unmapped fields", `{"model":"m","prompt":"p","images":[{"image_url":"https://a.example/1.png"},{"image_url":"https://a.example/2.png"}],"n":3,"size":"1024x1024","quality":"high","output_format":"png","seed":-1,"watermark":false,"style":"x"}`,
			`{"model":"up","prompt":"p","image":["https://a.example/1.png","https://a.example/2.png"],"size":"1024x1024","seed":-1,"watermark":false,"response_format":"url","sequential_image_generation":"auto","sequential_image_generation_options":{"max_images":3}}`},
		{"n 1 and null seed", `{"model":"m","prompt":"p","images":[{"image_url":"https://a.example/1.png"}],"n":1,"seed":null}`,
			`{"model":"up","prompt":"p","image":"https://a.example/1.png","size":"2048x2048","response_format":"url","sequential_image_generation":"disabled"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ParseEdit([]byte(tc.edit)); err != nil {
				t.Fatalf("the edit is not valid: %v", err)
			}
			got, err := toSeedream([]byte(tc.edit), "up")
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

func TestToSeedreamRefusesWrongTypes(t *testing.T) {
	for field, value := range map[string]string{"seed": `"7"`, "watermark": `"no"`} {
		body := `{"model":"m","prompt":"p","images":[{"image_url":"https://a.example/1.png"}],"` + field + `":` + value + `}`
		_, err := toSeedream([]byte(body), "up")
		if e, ok := errors.AsType[*apierror.Error](err); !ok || e.Status != 400 || e.Param != field {
			t.Errorf("%s %s: got %v, want 400 naming %s", field, value, err, field)
		}
	}
	for _, seed := range []string{"-2", "2147483648", "1.5"} {
		body := `{"model":"m","prompt":"p","images":[{"image_url":"https://a.example/1.png"}],"seed":` + seed + `}`
		if _, err := toSeedream([]byte(body), "up"); err == nil {
			t.Errorf("seed %s accepted", seed)
		}
	}
}

// Ark's answer maps to the edit's: the images that were made, and the first failed image's error
// only when none was made.
func TestFromSeedream(t *testing.T) {
	for _, tc := range []struct {
		name, ark, want string
		images          int64
	}{
		{"two images", `{"model":"up","created":1757469561,"data":[{"url":"https://r.example/0.jpeg","size":"2048x2048"},{"url":"https://r.example/1.jpeg","size":"2048x2048"}],"usage":{"generated_images":2,"output_tokens":32768,"total_tokens":32768}}`,
			`{"created":1757469561,"data":[{"url":"https://r.example/0.jpeg"},{"url":"https://r.example/1.jpeg"}]}`, 2},
		{"one made, one failed", `{"created":1,"data":[{"url":"https://r.example/0.jpeg"},{"error":{"code":"OutputImageSensitiveContentDetected","message":"m"}}],"usage":{"generated_images":1}}`,
			`{"created":1,"data":[{"url":"https://r.example/0.jpeg"}]}`, 1},
		{"none made", `{"created":1,"data":[{"error":{"code":"OutputImageSensitiveContentDetected","message":"m"}}],"usage":{"generated_images":0}}`,
			`{"created":1,"data":[],"error":{"code":"OutputImageSensitiveContentDetected","message":"m"}}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fromSeedream([]byte(tc.ark))
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tc.want)
			}
			// The edit handler settles the hold from the items of data.
			if _, images, ok := readAnswer(got); !ok || images != tc.images {
				t.Fatalf("readAnswer(%s) = %d images, %v; want %d", got, images, ok, tc.images)
			}
		})
	}
	for _, bad := range []string{`[]`, `{"data":[]}`, `{"created":1}`, `not json`} {
		if _, err := fromSeedream([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// The protocol written out as ark sends an edit to Ark's images/generations; a provider without
// a protocol keeps sending it to images/edits as it came.
func TestProtocolPicksTheEditEndpoint(t *testing.T) {
	for _, tc := range []struct{ protocol, wantPath string }{
		{"", "/api/v3/images/edits"},
		{"ark", "/api/v3/images/generations"},
	} {
		var gotPath string
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gotPath = r.URL.Path
			io.WriteString(w, `{"created":1,"data":[{"url":"https://r.example/0.jpeg"}]}`)
		}))
		t.Cleanup(up.Close)
		base, _ := url.Parse(up.URL + "/api/v3")
		cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: base, APIKey: "upstream-secret", Protocol: tc.protocol, Models: []string{"m"}}})
		if err != nil {
			t.Fatal(err)
		}
		h := &Handler{Catalog: cat, Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop()}
		r := httptest.NewRequest("POST", "/v1/images/edits", strings.NewReader(`{"model":"m","prompt":"p","images":[{"image_url":"https://cdn.example.com/a.png"}]}`))
		r.Header.Set("Content-Type", "application/json")
		r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme"}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 || gotPath != tc.wantPath {
			t.Errorf("protocol %q: %d %s, sent to %q; want 200 from %s", tc.protocol, w.Code, w.Body, gotPath, tc.wantPath)
		}
	}
}
