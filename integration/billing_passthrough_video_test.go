package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// passVideoCaddyfile leaves OpenAI's video model to pass-through (no mediagw_videos), priced
// per second with a 1080p band.
const passVideoCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models sora-2
		}
		price sora-2 {
			second 0.10
			second 1080p 0.25
		}
		key mg-pass-video {
			account filmmakers
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {{up_host}} {
			header_up Host {upstream_hostport}
		}
	}
}
`

// fakeVideoCreatesFailingFirst answers every POST /v1/videos but the first with a queued video
// video_<n> (n its count), and the first with first, which stages how a provider fails it; any
// other request is 404. It counts the creates.
func fakeVideoCreatesFailingFirst(t *testing.T, creates *atomic.Int64, first http.HandlerFunc) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil || r.Method != http.MethodPost || r.URL.Path != "/v1/videos" {
			http.NotFound(w, r)
			return
		}
		n := creates.Add(1)
		if n == 1 {
			first(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"video_%d","object":"video","created_at":1,"status":"queued","model":"sora-2","progress":0,"seconds":"4","size":"720x1280"}`, n)
	}))
	t.Cleanup(up.Close)
	return up
}

// fakeOpenAIVideoCreates answers POST /v1/videos (JSON or multipart, as OpenAI's reference takes it)
// with a queued video object, and counts the creates.
func fakeOpenAIVideoCreates(t *testing.T, creates *atomic.Int64) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" || r.Method != "POST" || r.URL.Path != "/v1/videos" {
			http.Error(w, `{"error":{"message":"not here","type":"invalid_request_error","code":null}}`, http.StatusNotFound)
			return
		}
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := creates.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"video_%d","object":"video","created_at":1,"status":"queued","model":"sora-2","progress":0,"seconds":"4","size":"720x1280"}`, n)
	}))
	t.Cleanup(up.Close)
	return up
}

// TestPassThroughVideoCreateIsHeldBySeconds: a video create passed through to the provider
// (POST /v1/videos without mediagw_videos) is held as a video task of its seconds and size
// (the hold stays held until the video's end is seen, see TestPassThroughVideoChargedByItsEnd): the OpenAI SDK's multipart create of 8 s at 1280x720 costs 8 × 0.10, a JSON one of
// 4 s at 1024x1792 (1080p) 4 × 0.25; one of 12 s at 1080p (3) does not fit what is left and is
// a 402 that never reaches the provider; a form that repeats seconds, or sends one too long
// to read, is a 400; one that names seconds and duration, or size and resolution, is held at
// the costlier of the two. (Before, the hold and the charge were 0 whatever the length: a
// per-second price made such videos free.)
func TestPassThroughVideoCreateIsHeldBySeconds(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	var creates atomic.Int64
	up := fakeOpenAIVideoCreates(t, &creates)
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	env := keysEnv{g: g}
	if r := env.adminMoney(t, "POST", "/mediagw/accounts/filmmakers/credit", `{"amount":"3"}`,
		map[string]string{"Idempotency-Key": "films-1", "Content-Type": "application/json"}); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	// Each video's hold stays held until the gateway sees how it ended (this provider's videos
	// are never read again): held is the sum of the estimates of the videos created.
	settled := func(balance, held string) { t.Helper(); awaitBalance(t, g, "filmmakers", balance, held) }

	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	video, err := client.Videos.New(ctx, openai.VideoNewParams{Model: "sora-2", Prompt: "a lighthouse at dusk",
		Seconds: openai.VideoSeconds8, Size: openai.VideoSize1280x720})
	if err != nil || video.ID == "" {
		t.Fatalf("SDK create = %+v, %v", video, err)
	}
	settled("2.2", "0.8")

	if r := call(t, "POST", base+"/v1/videos", "mg-pass-video", `{"model":"sora-2","prompt":"x","seconds":"12","size":"1024x1792"}`); r.status != 402 ||
		!strings.Contains(string(r.body), "insufficient_quota") {
		t.Fatalf("12 s at 1080p (3) past a balance of 2.2 = %d %s, want 402", r.status, r.body)
	}
	if r := call(t, "POST", base+"/v1/videos", "mg-pass-video", `{"model":"sora-2","prompt":"x","seconds":4,"size":"1024x1792"}`); r.status != 200 {
		t.Fatalf("4 s at 1080p = %d %s", r.status, r.body)
	}
	settled("1.2", "1.8")

	// A body that names a length or a picture twice, in OpenAI's spelling and the task API's
	// (its provider may follow either), is held at the costlier reading; a duration of -1 (the
	// model chooses) at max_seconds (15), frames (which win over duration) at 24 a second, a
	// size written with * (DashScope's spelling) at its resolution, not the default 720p, and a
	// resolution of 1080 lines at 1080p, not the plain second price, a length with a fraction
	// (12.5) at its ceiling (13 s), not as absent (the default 5 s). Each is past the 1.2 left,
	// so each is a 402 that never reaches the provider. (Before, the first spelling alone was
	// held, and charged: 4 s of a video that its provider made 15 s long cost 0.4; -1 was held
	// as the default 5 s.)
	for _, body := range []string{
		`{"model":"sora-2","prompt":"x","seconds":"4","duration":15,"size":"1280x720"}`,        // 15 × 0.10
		`{"model":"sora-2","prompt":"x","duration":15,"seconds":"4","size":"1280x720"}`,        // 15 × 0.10
		`{"model":"sora-2","prompt":"x","seconds":"8","size":"1280x720","resolution":"1080p"}`, // 8 × 0.25
		`{"model":"sora-2","prompt":"x","duration":-1,"size":"1280x720"}`,                      // 15 × 0.10
		`{"model":"sora-2","prompt":"x","duration":2,"frames":289,"size":"1280x720"}`,          // 289 / 24 × 0.10
		`{"model":"sora-2","prompt":"x","seconds":"8","size":"1080*1920"}`,                     // 8 × 0.25
		`{"model":"sora-2","prompt":"x","seconds":"8","resolution":"1080"}`,                    // 8 × 0.25
		`{"model":"sora-2","prompt":"x","duration":12.5,"size":"1280x720"}`,                    // 13 × 0.10
		`{"model":"sora-2","prompt":"x","seconds":"12.5","size":"1280x720"}`,                   // 13 × 0.10
	} {
		if r := call(t, "POST", base+"/v1/videos", "mg-pass-video", body); r.status != 402 ||
			!strings.Contains(string(r.body), "insufficient_quota") {
			t.Fatalf("%s past a balance of 1.2 = %d %s, want 402", body, r.status, r.body)
		}
	}

	// Two seconds parts (upstreams differ on which they keep), or one too long to read (70
	// zeros then 12, which a lax upstream reads as 12), are refused.
	for _, seconds := range [][]string{{"4", "12"}, {strings.Repeat("0", 70) + "12"}} {
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		fields := [][2]string{{"model", "sora-2"}, {"prompt", "x"}}
		for _, s := range seconds {
			fields = append(fields, [2]string{"seconds", s})
		}
		for _, f := range fields {
			if err := mw.WriteField(f[0], f[1]); err != nil {
				t.Fatal(err)
			}
		}
		mw.Close()
		req, _ := http.NewRequest("POST", base+"/v1/videos", &form)
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header.Set("Content-Type", mime.FormatMediaType("multipart/form-data", map[string]string{"boundary": mw.Boundary()}))
		if r := do(t, req); r.status != 400 || !strings.Contains(string(r.body), "seconds") {
			t.Fatalf("a form with seconds %q = %d %s, want 400 naming seconds", seconds, r.status, r.body)
		}
	}
	settled("1.2", "1.8")
	if n := creates.Load(); n != 2 {
		t.Fatalf("the provider saw %d creates, want 2", n)
	}
}
