package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// goFormVideos is an OpenAI-style POST /v1/videos (the reference's multipart create: model,
// prompt, seconds, size) served by a Go provider that reads its form with net/http's own reader
// (r.FormValue, as OpenAI-compatible servers written in Go do). Go's reader takes a part whose
// filename parameter is empty (filename="") for a text field (mime/multipart ReadForm: "if
// filename == "" { value }"). It answers with the video it made: the seconds and size it read.
func goFormVideos(t *testing.T, got *sync.Map) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" || r.Method != "POST" || r.URL.Path != "/v1/videos" {
			http.NotFound(w, r)
			return
		}
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		got.Store("raw", string(raw))
		r.Body = io.NopCloser(bytes.NewReader(raw))
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		seconds, size := r.FormValue("seconds"), r.FormValue("size")
		got.Store("seconds", seconds)
		got.Store("url", r.FormValue("input_reference"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"video_1","object":"video","created_at":1,"status":"queued","model":"sora-2","progress":0,"seconds":%q,"size":%q}`, seconds, size)
	}))
	t.Cleanup(up.Close)
	return up
}

// TestVideoFormEmptyFilenameIsReadAsAValue: a multipart video create whose seconds part carries
// filename="" is a text field to a Go provider (net/http's form reader) and a file to Python's
// and Node's. The gateway reads it one way, as the text field: it holds the 12 s the provider
// makes (1.2 at 0.10 a second, not the default 5 s), and forwards the part without the empty
// filename, so that every provider's reader takes it for the text field it was held at.
func TestVideoFormEmptyFilenameIsReadAsAValue(t *testing.T) {
	var got sync.Map
	up := goFormVideos(t, &got)
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "1", "form-film")

	create := func() response {
		var form bytes.Buffer
		const boundary = "formboundary"
		fmt.Fprintf(&form, "--%s\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nsora-2\r\n", boundary)
		fmt.Fprintf(&form, "--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na lighthouse at dawn\r\n", boundary)
		fmt.Fprintf(&form, "--%s\r\nContent-Disposition: form-data; name=\"seconds\"; filename=\"\"\r\n\r\n12\r\n", boundary)
		fmt.Fprintf(&form, "--%s--\r\n", boundary)
		req, _ := http.NewRequest("POST", base+"/v1/videos", &form)
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		return do(t, req)
	}
	// A balance of 1 does not pay for 12 s.
	if r := create(); r.status != 402 {
		t.Fatalf("create with a balance of 1: %d %s, want 402", r.status, r.body)
	}
	if _, forwarded := got.Load("seconds"); forwarded {
		t.Fatal("refused but forwarded")
	}
	keysEnv{g: g}.credit(t, "filmmakers", "9", "form-film-more")
	r := create()
	seconds, _ := got.Load("seconds")
	raw, _ := got.Load("raw")
	if r.status != 200 || seconds != "12" {
		t.Fatalf("create: %d %s; the provider read seconds %q", r.status, r.body, seconds)
	}
	if b, _ := raw.(string); strings.Contains(b, "filename") {
		t.Errorf("the seconds part was forwarded with a filename, a file to other readers:\n%s", b)
	}
	admin := "http://" + g.admin + "/mediagw/accounts/filmmakers"
	if held := call(t, "GET", admin+"/balance", "", nil).field("held"); held != "1.2" {
		t.Errorf("held %s for a video the provider makes as 12 s (1.2 at second 0.10)", held)
	}
}

// TestVideoFormEmptyFilenameIsCheckedAsAURL: a text part given filename="" is a text field to a
// Go provider, which would fetch the input_reference it holds: the gateway checks it as a URL a
// provider may fetch, and refuses a metadata address with 400 naming it, as it refuses the same
// part without the filename (the first case).
func TestVideoFormEmptyFilenameIsCheckedAsAURL(t *testing.T) {
	var got sync.Map
	up := goFormVideos(t, &got)
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "10", "form-film")
	for _, filename := range []string{"", `; filename=""`} {
		var form bytes.Buffer
		const boundary = "formboundary"
		fmt.Fprintf(&form, "--%s\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nsora-2\r\n", boundary)
		fmt.Fprintf(&form, "--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na lighthouse\r\n", boundary)
		fmt.Fprintf(&form, "--%s\r\nContent-Disposition: form-data; name=\"input_reference\"%s\r\n\r\nhttp://169.254.169.254/latest/meta-data/\r\n", boundary, filename)
		fmt.Fprintf(&form, "--%s--\r\n", boundary)
		req, _ := http.NewRequest("POST", base+"/v1/videos", &form)
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		got.Delete("url")
		r := do(t, req)
		u, forwarded := got.Load("url")
		if forwarded {
			t.Errorf("with %q the provider got input_reference %q (answer %d)", filename, u, r.status)
		}
		if r.status != 400 || !strings.Contains(string(r.body), `"param":"input_reference"`) {
			t.Errorf("with %q: %d %s, want 400 naming input_reference", filename, r.status, r.body)
		}
	}
}
