package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const resultAdminCaddyfile = `{
	admin 127.0.0.1:%d
	persist_config off
	mediagw {
		storage badger %s
		provider sora {
			base_url %s
			api_key openai-upstream-key
			protocol openai
			models sora-2
		}
		provider ark {
			base_url https://ark.ap-southeast.bytepluses.com/api/v3
			api_key ark-key-of-another-provider
			models seedance-1-0-pro
		}
		key mg-alice {
			account alice
		}
		watcher {
			interval 200ms
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_video_tasks
		mediagw_videos
		respond 404
	}
}
`

// TestResultRedirectCannotReadTheAdminEndpoint: an OpenAI-protocol upstream on the gateway's
// own host (a sidecar or a local gateway on 127.0.0.1, as in Caddyfile.example's providers)
// answers GET videos/{id}/content with a 302 to http://127.0.0.1:<admin port>/config/, Caddy's
// admin endpoint on the same host. Another port is another origin: the redirect is connected to
// only if public, so the owner's content read is refused and never streams the running config
// (every provider's api_key, here the Ark key that the OpenAI upstream was never given). Before
// the fix upstream.Open trusted "the upstream's host, any port" and streamed it.
func TestResultRedirectCannotReadTheAdminEndpoint(t *testing.T) {
	t.Parallel()
	adminPort := freePort(t)
	oai, _ := newFakeOpenAIVideos(t, "openai-upstream-key")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/content") {
			http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/config/", adminPort), http.StatusFound)
			return
		}
		oai.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(resultAdminCaddyfile, adminPort, t.TempDir(), up.URL+"/v1", port), base+"/")

	id := createSucceeded(t, base, "mg-alice", "sora-2")
	for _, path := range []string{taskPath + "/" + id + "/content", "/v1/videos/" + id + "/content"} {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer mg-alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "ark-key-of-another-provider") || strings.Contains(string(body), `"apps"`) {
			t.Fatalf("GET %s = %d (%s): the client was streamed the gateway's admin config, with another provider's key: %.300s",
				path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}

// createSucceeded creates a task of model with key at the gateway base and polls it until it
// has succeeded (30 s at most); it answers the task's id.
func createSucceeded(t *testing.T, base, key, model string) string {
	t.Helper()
	r := call(t, "POST", base+taskPath, key, map[string]any{"model": model,
		"content": []any{map[string]any{"type": "text", "text": "a lighthouse"}}})
	id := r.field("id")
	if r.status != 200 || id == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r = call(t, "GET", base+taskPath+"/"+id, key, nil)
		if r.field("status") == "succeeded" {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not succeed: %d %s", r.status, r.body)
		}
	}
}
