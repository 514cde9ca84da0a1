package integration

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestKeptContentRedirectStaysOutOfTheAccessLog: with keep_results on a private bucket, GET
// /v1/videos/{id}/content answers the owner a 302 to a fresh presigned GET. Caddy's access log
// prints the answer's headers (resp_headers), so the redirect's Location would put the
// presigned URL, a credential for its life, in the log. The entry is written, and its Location
// carries no signature; the redirect itself works.
func TestKeptContentRedirectStaysOutOfTheAccessLog(t *testing.T) {
	t.Parallel()
	k := newKeepSetup(t, false, 1<<20)
	cfg := strings.Replace(k.cfg, "\troute {\n\t\tmediagw_auth\n", "\tlog\n\troute {\n\t\tmediagw_auth\n\t\tmediagw_videos /v1/videos*\n", 1)
	if cfg == k.cfg {
		t.Fatal("the keep_results Caddyfile changed shape: no route to add mediagw_videos and log to")
	}
	gw := startCaddyProcess(t, cfg, k.base+"/")
	id := k.create(t)
	k.succeeded(t)

	// The front reads a trailing slash as none: that call redirects too, and is logged the same.
	for _, path := range []string{"/content", "/content/"} {
		req, err := http.NewRequest(http.MethodGet, k.base+"/v1/videos/"+id+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer mg-alice")
		noFollow := &http.Client{Timeout: client.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		location := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusFound || !strings.Contains(location, "X-Amz-Signature=") {
			t.Fatalf("%s = %d, Location %q; want 302 to a presigned GET", path, resp.StatusCode, location)
		}
		if got := download(t, location); !bytes.Equal(got, k.up.video) {
			t.Fatalf("the redirect's object differs from the provider's video (%d bytes)", len(got))
		}
	}

	gw.kill()
	log, err := os.ReadFile(gw.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/content", "/content/"} {
		var entry string
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, `"/v1/videos/`+id+path+`"`) && strings.Contains(line, `"status":302`) {
				entry = line
			}
		}
		if entry == "" {
			t.Fatalf("no access log entry for the %s redirect:\n%s", path, log)
		}
		if !strings.Contains(entry, `"Location"`) {
			t.Fatalf("the access log entry has no Location header at all: %s", entry)
		}
	}
	if bytes.Contains(log, []byte("X-Amz-Signature")) || bytes.Contains(log, []byte("X-Amz-Credential")) {
		t.Fatalf("the access log holds the presigned URL of a redirect:\n%s", log)
	}
}

// TestKeptResultIsNeverActiveContent: a result source that answers with an active type (a
// provider's HTML error page served with 200, an SVG) is kept as application/octet-stream, so
// the operator's bucket or CDN never serves a page or a script under its own origin; a video's
// own type is kept.
func TestKeptResultIsNeverActiveContent(t *testing.T) {
	t.Parallel()
	for _, active := range []string{"text/html; charset=utf-8", "image/svg+xml"} {
		k := newKeepSetup(t, true, 1<<20)
		k.up.mu.Lock()
		k.up.frameType = active
		k.up.mu.Unlock()
		startCaddyProcess(t, k.cfg, k.base+"/")
		k.create(t)
		video, lastFrame := contentURLs(t, k.succeeded(t))
		for u, want := range map[string]string{video: "video/mp4", lastFrame: "application/octet-stream"} {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			if err := resp.Body.Close(); err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || got != want {
				t.Errorf("source type %q: the kept object %s is served %d as %q; want %q", active, u, resp.StatusCode, got, want)
			}
		}
	}
}
