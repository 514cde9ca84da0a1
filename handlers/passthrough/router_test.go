package passthrough

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
)

func catalog(t testing.TB) *providers.Catalog {
	t.Helper()
	mk := func(name, base, style string, models ...string) *providers.Provider {
		u, _ := url.Parse(base)
		return &providers.Provider{Name: name, BaseURL: u, APIKey: name + "-key", AuthStyle: style, Models: models}
	}
	c, err := providers.NewCatalog([]*providers.Provider{
		mk("ark", "https://ark.example.com/api/v3", "", "doubao"),
		mk("gemini", "https://g.example.com/v1beta", providers.AuthGoogAPIKey, "gemini-pro"),
		mk("root", "https://root.example.com", "", "whisper"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRouteRewritesForTheProvider(t *testing.T) {
	extra, err := ParseEndpoint("POST", "/v1/moderations")
	if err != nil {
		t.Fatal(err)
	}
	rt := &Router{Catalog: catalog(t), Extra: []Endpoint{extra}}
	id := auth.Identity{Account: "a"}
	for _, tc := range []struct {
		path, body, wantPath, wantHeader, wantValue string
	}{
		{"/v1/chat/completions", `{"model":"doubao"}`, "/api/v3/chat/completions", "Authorization", "Bearer ark-key"},
		{"/v1beta/models/gemini-pro:streamGenerateContent", `{}`, "/v1beta/models/gemini-pro:streamGenerateContent", "X-Goog-Api-Key", "gemini-key"},
		{"/v1/embeddings", `{"model":"whisper"}`, "/embeddings", "Authorization", "Bearer root-key"},
		{"/v1/moderations", `{"model":"doubao"}`, "/api/v3/moderations", "Authorization", "Bearer ark-key"},
	} {
		r := httptest.NewRequest("POST", tc.path+"?key=client-secret&alt=sse", strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer client-secret")
		route, err := rt.Route(httptest.NewRecorder(), r, id)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		route.Done()
		if r.URL.Path != tc.wantPath || r.Header.Get(tc.wantHeader) != tc.wantValue || r.URL.RawQuery != "alt=sse" {
			t.Errorf("%s -> %s %s=%q ?%s", tc.path, r.URL.Path, tc.wantHeader, r.Header.Get(tc.wantHeader), r.URL.RawQuery)
		}
		if got, _ := io.ReadAll(r.Body); string(got) != tc.body {
			t.Errorf("%s: body %q changed to %q", tc.path, tc.body, got)
		}
	}
}

func TestMultipartSpoolsToDiskAndReplaysExactly(t *testing.T) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "a.wav")
	fw.Write(bytes.Repeat([]byte("0123456789"), 50_000)) // 500 KB, past the 64 KiB memory bound
	mw.WriteField("model", "whisper")
	mw.WriteField("language", "en")
	mw.Close()
	sent := body.Bytes()

	rt := &Router{Catalog: catalog(t), SpoolMemory: 64 << 10, TempDir: t.TempDir()}
	r := httptest.NewRequest("POST", "/v1/audio/transcriptions", bytes.NewReader(sent))
	r.Header.Set("Content-Type", mw.FormDataContentType())
	route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	if err != nil {
		t.Fatal(err)
	}
	defer route.Done()
	if route.Model != "whisper" {
		t.Fatalf("model = %q", route.Model)
	}
	// The client's body was canonical but for its boundary: it is replayed with the gateway's.
	want := bytes.ReplaceAll(sent, []byte(mw.Boundary()), []byte(forwardedBoundary(t, r)))
	got, err := io.ReadAll(r.Body)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("replayed %d bytes (err %v), want %d", len(got), err, len(want))
	}
}

func TestRouteRefusals(t *testing.T) {
	rt := &Router{Catalog: catalog(t), MaxJSONBytes: 64}
	for _, tc := range []struct {
		name, contentType, body string
		id                      auth.Identity
		status                  int
		code                    string
	}{
		{"no model", "application/json", `{}`, auth.Identity{}, 400, "missing_model"},
		{"empty model", "application/json", `{"model":""}`, auth.Identity{}, 400, "missing_model"},
		{"model not a string", "application/json", `{"model":[1]}`, auth.Identity{}, 400, "invalid_request_body"},
		{"not JSON", "application/json", `nope`, auth.Identity{}, 400, "invalid_request_body"},
		{"too large", "application/json", `{"model":"doubao","pad":"` + strings.Repeat("x", 100) + `"}`, auth.Identity{}, 413, "request_too_large"},
		{"other content type", "text/plain", `doubao`, auth.Identity{}, 400, "missing_model"},
		{"multipart without model", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--x--\r\n", auth.Identity{}, 400, "missing_model"},
		{"no parts at all", "multipart/form-data; boundary=x", "--x--\r\n", auth.Identity{}, 400, "missing_model"},
		{"garbage", "multipart/form-data; boundary=x", "garbage", auth.Identity{}, 400, "invalid_request_body"},
		// An upstream reading JSON whatever the Content-Type would run whisper-pro.
		{"preamble", "multipart/form-data; boundary=x", "{\"model\":\"whisper-pro\"}\r\n--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper\r\n--x--\r\n", auth.Identity{}, 400, "invalid_request_body"},
		{"multipart on a JSON endpoint", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\ndoubao\r\n--x--\r\n", auth.Identity{}, 400, "invalid_request_body"},
		{"broken part", "multipart/form-data; boundary=x", "--x\r\nno header end", auth.Identity{}, 400, "invalid_request_body"},
		{"not allowed", "application/json", `{"model":"doubao"}`, auth.Identity{Models: []string{"gpt-*"}}, 403, "model_not_allowed"},
		{"unknown", "application/json", `{"model":"nope"}`, auth.Identity{}, 404, "model_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/v1/chat/completions"
			if strings.HasPrefix(tc.contentType, "multipart/") && tc.name != "multipart on a JSON endpoint" {
				path = "/v1/audio/transcriptions"
			}
			r := httptest.NewRequest("POST", path, strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.contentType)
			_, err := rt.Route(httptest.NewRecorder(), r, tc.id)
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status != tc.status || e.Code != tc.code {
				t.Fatalf("err = %v, want %d %s", err, tc.status, tc.code)
			}
		})
	}
}

func TestIsVersion(t *testing.T) {
	for seg, want := range map[string]bool{"v1": true, "v1beta": true, "v2alpha1": true, "v": false, "video": false, "api": false, "V1": false} {
		if isVersion(seg) != want {
			t.Errorf("isVersion(%q) = %v", seg, !want)
		}
	}
}

func FuzzRoute(f *testing.F) {
	f.Add("application/json", `{"model":"doubao"}`, "/v1/chat/completions")
	f.Add("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper\r\n--x--\r\n", "/v1/audio/transcriptions")
	f.Add("text/plain", "", "/v1beta/models/gemini-pro:generateContent")
	f.Add("application/json", `{"model":"doubao","Model":"whisper","previous_response_id":"r"}`, "/v1/responses")
	f.Add("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name*=UTF-8''model\r\n\r\nwhisper\r\n--x--\r\n", "/v1/audio/translations")
	f.Add("application/json", `{"prompt":"x"}`, "/v1/videos/video_1/remix")
	f.Fuzz(func(t *testing.T, contentType, body, path string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#%\x00\r\n") {
			return
		}
		rt := &Router{Catalog: catalog(t), MaxJSONBytes: 1 << 16, SpoolMemory: 64, TempDir: t.TempDir()}
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.URL.Path = path
		r.Header.Set("Content-Type", contentType)
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		if err != nil {
			var e *apierror.Error
			if !errors.As(err, &e) || e.Status < 400 || e.Status >= 500 {
				t.Fatalf("error %v is not a 4xx contract error", err)
			}
			return
		}
		defer route.Done()
		if got, _ := io.ReadAll(r.Body); string(got) != body && route.Model == "" {
			t.Fatalf("routed without a model")
		}
	})
}

// Two Content-Type headers are refused: one upstream would read the first, another the last.
func TestRouteRefusesTwoContentTypes(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	body := "--a\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper\r\n--a--\r\n"
	r := httptest.NewRequest("POST", "/v1/audio/transcriptions", strings.NewReader(body))
	r.Header.Add("Content-Type", "multipart/form-data; boundary=a")
	r.Header.Add("Content-Type", "multipart/form-data; boundary=b")
	_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != 400 || e.Param != "Content-Type" {
		t.Fatalf("err = %v, want 400 naming Content-Type", err)
	}
}

// A JSON body is checked as UTF-8. An upstream that honours another charset (UTF-7 decodes
// "+ACIAfQ-" inside a string as `"}`) would read fields that were never checked, so a JSON
// Content-Type may name no charset but UTF-8.
func TestRouteRefusesJSONInAnotherCharset(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	body := `{"model":"doubao","messages":[],"x":"+ACIALAAiAG0AbwBkAGUAbAAiADoAIgBvAHQAaABlAHI-"}`
	for ct, ok := range map[string]bool{
		"application/json; charset=utf-7":         false,
		"application/json; charset=UTF-16":        false,
		"application/json;charset=\"iso-8859-1\"": false,
		"application/vnd.api+json; charset=utf-7": false,
		"application/json; charset=utf-7; x":      false,
		"APPLICATION/JSON; CHARSET=UTF-7":         false,
		"Application/Json; Charset=UTF-7":         false,
		"application/JSON; charset=utf-7":         false,
		"application/json; charset=utf-8; x":      false,
		"application/json; charset=utf-8":         true,
		"application/json; charset=\"UTF-8\"":     true,
		"application/json":                        true,
	} {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		r.Header.Set("Content-Type", ct)
		_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		var e *apierror.Error
		switch {
		case ok && err != nil:
			t.Errorf("%s: refused: %v", ct, err)
		case !ok && (!errors.As(err, &e) || e.Status != 400 || e.Param != "Content-Type"):
			t.Errorf("%s: err = %v, want 400 naming Content-Type", ct, err)
		}
	}
	// The wording is the gateway's own JSON endpoints' for a wrong Content-Type.
	r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json; charset=latin1")
	_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	if want := "Content-Type must be application/json; got application/json; charset=latin1 (a JSON body is UTF-8: charset may be utf-8 or left out)"; err == nil || err.Error() != want {
		t.Errorf("latin1: err = %v, want %q", err, want)
	}
	// The path-model endpoints and calls on owned objects too.
	r = httptest.NewRequest("POST", "/v1beta/models/gemini-pro:generateContent", strings.NewReader(`{"contents":[]}`))
	r.Header.Set("Content-Type", "application/json; charset=utf-7")
	if _, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{}); err == nil {
		t.Error("generateContent: a UTF-7 body was accepted")
	}
}

// The gateway checks the body it reads; an upstream that decodes a declared Content-Encoding
// reads another. A coded body is refused (an identity coding passes).
func TestRouteRefusesCodedBodies(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for coding, ok := range map[string]bool{"gzip": false, "deflate": false, "br, identity": false, "identity": true, "": true} {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"doubao","messages":[]}`))
		r.Header.Set("Content-Type", "application/json")
		if coding != "" {
			r.Header.Set("Content-Encoding", coding)
		}
		_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		var e *apierror.Error
		switch {
		case ok && err != nil:
			t.Errorf("%q: refused: %v", coding, err)
		case !ok && (!errors.As(err, &e) || e.Status != 415 || e.Param != "Content-Encoding"):
			t.Errorf("%q: err = %v, want 415 naming Content-Encoding", coding, err)
		}
	}
}

// The model is read from the body or the path; a model in the query, which some upstreams read
// instead, is refused however it is spelled.
func TestRouteRefusesAModelInTheQuery(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for query, ok := range map[string]bool{"model=whisper": false, "MODEL=x": false, "mod%65l=x": false, "a=1;model=x": false, "models=1": true, "alt=sse": true} {
		r := httptest.NewRequest("POST", "/v1/chat/completions?"+query, strings.NewReader(`{"model":"doubao","messages":[]}`))
		r.Header.Set("Content-Type", "application/json")
		_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
		var e *apierror.Error
		switch {
		case ok && err != nil:
			t.Errorf("%q: refused: %v", query, err)
		case !ok && (!errors.As(err, &e) || e.Status != 400 || e.Param != "model"):
			t.Errorf("%q: err = %v, want 400 naming model", query, err)
		}
	}
}

// TestRouteMultipartWithoutBoundary: a multipart endpoint sent multipart/form-data without a
// boundary is told that the boundary is missing, not that it takes JSON (which it does not).
func TestRouteMultipartWithoutBoundary(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	r := httptest.NewRequest("POST", "/v1/audio/transcriptions", strings.NewReader("--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper\r\n--x--\r\n"))
	r.Header.Set("Content-Type", "multipart/form-data")
	_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{})
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != 400 || e.Code != "invalid_request_body" || e.Param != "Content-Type" ||
		!strings.Contains(e.Message, "boundary") || strings.Contains(e.Message, "JSON") {
		t.Fatalf("err = %v, want 400 invalid_request_body about the missing boundary", err)
	}
}
