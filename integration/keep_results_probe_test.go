package integration

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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

	for _, path := range []string{"/content"} {
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

	// A trailing slash names no endpoint (TestTrailingSlashIsNoEndpoint): 404, no redirect.
	slashed, err := http.NewRequest(http.MethodGet, k.base+"/v1/videos/"+id+"/content/", nil)
	if err != nil {
		t.Fatal(err)
	}
	slashed.Header.Set("Authorization", "Bearer mg-alice")
	if resp, err := client.Do(slashed); err != nil {
		t.Fatal(err)
	} else if _ = resp.Body.Close(); resp.StatusCode != http.StatusNotFound || resp.Header.Get("Location") != "" {
		t.Fatalf("/content/ = %d, Location %q; want 404 without a redirect", resp.StatusCode, resp.Header.Get("Location"))
	}

	gw.kill()
	log, err := os.ReadFile(gw.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/content"} {
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

// TestKeptResultAddressesStayPublic: the copy of a result goes where the provider's answer says,
// so whoever shapes that answer chooses where the gateway connects. A video_url off the
// provider's host that is not public (127.0.0.2, standing for the gateway's admin endpoint, a
// metadata service or an operator's internal host), or on another port of the provider's own
// host (127.0.0.1), named directly or reached through a redirect from the provider's own host, is
// never connected to: nothing is kept, the copy is not tried again (the address is as private at
// every attempt), and the task ends succeeded at once with the provider's own result, as a
// result too large to keep does. Before the fix the copy
// was tried keep_results attempts times (8), with a backoff, and the task stayed running for
// minutes.
func TestKeptResultAddressesStayPublic(t *testing.T) {
	t.Parallel()
	var internalHits atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listening on 127.0.0.2 (loopback): %v", err)
	}
	internal := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write([]byte("internal secret")) // a test server: a failed write shows as a short body
	})}}
	internal.Start()
	t.Cleanup(internal.Close)

	// The same internal server on the provider's own host (127.0.0.1), another port.
	beside := httptest.NewServer(internal.Config.Handler)
	t.Cleanup(beside.Close)

	k := newKeepSetup(t, false, 1<<20)
	startCaddyProcess(t, k.cfg, k.base+"/")
	for _, tc := range []struct{ name, videoURL string }{
		{"named directly", internal.URL + "/admin/video.mp4"},
		{"through the provider's redirect", k.up.URL + "/files/moved.mp4"},
		{"on another port of the provider's host", beside.URL + "/admin/video.mp4"},
	} {
		k.up.mu.Lock()
		k.up.videoURL, k.up.movedTo = tc.videoURL, internal.URL+"/metadata/video.mp4"
		k.up.mu.Unlock()
		id := k.create(t)
		var answer map[string]any
		deadline := time.Now().Add(30 * time.Second)
		for answer == nil || answer["status"] != "succeeded" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the task is %v after 30 s; want succeeded with the provider's result", tc.name, answer["status"])
			}
			time.Sleep(100 * time.Millisecond)
			answer = call(t, "GET", k.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil).json(t)
		}
		if video, _ := contentURLs(t, answer); video != tc.videoURL {
			t.Fatalf("%s: the succeeded task's video_url is %s; want the provider's %s", tc.name, video, tc.videoURL)
		}
		if internalHits.Load() != 0 {
			t.Fatalf("%s: the internal server was called %d times", tc.name, internalHits.Load())
		}
	}
	if n := k.up.moved.Load(); n != 1 {
		t.Fatalf("the provider's redirect was fetched %d times; want once (not tried again)", n)
	}
	list, err := k.s3.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(k.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), "/video.mp4") || strings.HasSuffix(aws.ToString(o.Key), "/video") {
			t.Fatalf("the bucket keeps a video %s", aws.ToString(o.Key))
		}
	}
}
