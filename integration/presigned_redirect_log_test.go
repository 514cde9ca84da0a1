package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// passVideoLogCaddyfile is passVideoCaddyfile (OpenAI's videos left to pass-through) in the
// README's proxy form, with the site's access log on.
const passVideoLogCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models sora-2
		}
		key mg-pass-video {
			account filmmakers
		}
	}
}

http://127.0.0.1:{{port}} {
	log {
		output file {{access_log}}
	}
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
			lb_policy first
		}
	}
}
`

// TestPassThroughRedirectKeepsPresignedURLOutOfTheLog: a provider may answer GET
// /v1/videos/{id}/content with a redirect to a presigned (signed, temporary) download URL, as
// OpenAI-style providers that keep results in object storage do. The pass-through relays the
// redirect as it is (the client follows it), but Caddy's access log would print the answer's
// headers, the Location with its signature: mediagw_route writes the entry itself, the Location
// without its query, as mediagw_videos does for its content calls. "Presigned URLs are never
// logged."
func TestPassThroughRedirectKeepsPresignedURLOutOfTheLog(t *testing.T) {
	const signed = "https://results.example.com/video_1.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20261129%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=deadbeefcafe0123456789"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" {
			http.Error(w, "no", 401)
			return
		}
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/videos":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"video_1","object":"video","created_at":1,"status":"completed","model":"sora-2","progress":100,"seconds":"4","size":"720x1280"}`)
		case r.Method == "GET" && r.URL.Path == "/v1/videos/video_1/content":
			http.Redirect(w, r, signed, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(up.Close)
	// Both forms of docs/providers.md: one reverse_proxy for all (transport mediagw), and
	// reverse_proxy to the provider's address.
	oldForm := strings.Replace(passVideoCaddyfile, "http://127.0.0.1:{{port}} {\n", "http://127.0.0.1:{{port}} {\n\tlog {\n\t\toutput file {{access_log}}\n\t}\n", 1)
	for name, caddyfile := range map[string]string{"transport mediagw": passVideoLogCaddyfile, "reverse_proxy to the provider": oldForm} {
		t.Run(name, func(t *testing.T) { checkRedirectLog(t, caddyfile, up.URL, signed) })
	}
}

// checkRedirectLog runs caddyfile in front of up, whose video_1's content redirects to signed, and
// checks that the client gets the redirect as it is, and the access log its Location unsigned.
func checkRedirectLog(t *testing.T, caddyfile, up, signed string) {
	accessLog := filepath.Join(t.TempDir(), "access.log")
	base, _ := startSimGateway(t, caddyfile, map[string]string{"up_url": up, "up_host": strings.TrimPrefix(up, "http://"), "access_log": accessLog})
	if r := call(t, "POST", base+"/v1/videos", "mg-pass-video", `{"model":"sora-2","prompt":"a lighthouse"}`); r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest("GET", base+"/v1/videos/video_1/content", nil)
	req.Header.Set("Authorization", "Bearer mg-pass-video")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != signed {
		t.Errorf("content: %d Location %q, want the provider's redirect as it is", resp.StatusCode, resp.Header.Get("Location"))
	}
	client.CloseIdleConnections()
	waitFor(t, "the access log", func() bool { b, _ := os.ReadFile(accessLog); return strings.Count(string(b), "\n") >= 2 })
	b, _ := os.ReadFile(accessLog)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "X-Amz-Signature") || strings.Contains(line, "deadbeefcafe") {
			t.Errorf("the access log holds the presigned URL: %s", line)
		}
	}
	if !strings.Contains(string(b), `"uri":"/v1/videos/video_1/content"`) || !strings.Contains(string(b), "video_1.mp4?REDACTED") {
		t.Errorf("the access log lacks the content call's entry with its Location unsigned:\n%s", b)
	}
}
