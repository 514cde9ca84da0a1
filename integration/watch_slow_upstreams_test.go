package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const twoSlowUpstreamsCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		provider wan-slow {
			base_url %s
			api_key dash-upstream-key
			protocol dashscope
			models wan-slow
		}
		provider wan-slow2 {
			base_url %s
			api_key dash-upstream-key
			protocol dashscope
			models wan-slow2
		}
		provider wan {
			base_url %s
			api_key dash-upstream-key
			protocol dashscope
			models wan2.2-t2v-plus
		}
		key mg-alice {
			account alice
		}
		key mg-mallory {
			account mallory
		}
		watcher {
			interval 200ms
		}
		callbacks {
			allow_private
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_video_tasks
		respond 404
	}
}
`

// TestWatcherKeepsAHealthyUpstreamBesideTwoSlowOnes: two DashScope upstreams whose task reads
// hang (45 s each, under the 60 s upstream_timeout: two providers in one outage, or one
// provider's two keys) have 12 running tasks each; a healthy provider's task must still be read
// on time: alice's succeeded callback comes within 30 s of her create. The watcher's reads in
// flight are bounded watcher-wide, and the slow upstreams' shares leave the healthy one a read.
func TestWatcherKeepsAHealthyUpstreamBesideTwoSlowOnes(t *testing.T) {
	t.Parallel()
	hang := func() *httptest.Server {
		fake, _ := newFakeDashScope(t, "dash-upstream-key")
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/tasks/") {
				select {
				case <-time.After(45 * time.Second):
				case <-r.Context().Done():
					return
				}
			}
			fake.ServeHTTP(w, r)
		}))
		t.Cleanup(func() { s.CloseClientConnections(); s.Close() })
		return s
	}
	slow1, slow2 := hang(), hang()
	_, fastURL := newFakeDashScope(t, "dash-upstream-key")
	rc := newReceiver(t, func(int) int { return 200 })
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(twoSlowUpstreamsCaddyfile, t.TempDir(), slow1.URL+"/api/v1", slow2.URL+"/api/v1", fastURL, port), base+"/")

	for i := range 24 {
		model := []string{"wan-slow", "wan-slow2"}[i%2]
		r := call(t, "POST", base+taskPath, "mg-mallory", map[string]any{"model": model,
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("slow %d", i)}}})
		if r.status != 200 {
			t.Fatalf("mallory's create %d = %d %s", i, r.status, r.body)
		}
		time.Sleep(250 * time.Millisecond)
	}
	r := call(t, "POST", base+taskPath, "mg-alice", map[string]any{"model": "wan2.2-t2v-plus", "callback_url": rc.URL,
		"content": []any{map[string]any{"type": "text", "text": "a harbour at night"}}})
	if r.status != 200 {
		t.Fatalf("alice's create = %d %s", r.status, r.body)
	}
	created := time.Now()
	deadline := created.Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, d := range rc.seen() {
			if d.status == "succeeded" {
				t.Logf("alice's succeeded callback came %v after her create", time.Since(created).Round(time.Millisecond))
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var got []string
	for _, d := range rc.seen() {
		got = append(got, d.status)
	}
	t.Fatalf("alice's task on a healthy provider had no succeeded callback 30 s after its create (callbacks seen: %v): "+
		"two slow upstreams hold every read of the watcher", got)
}
