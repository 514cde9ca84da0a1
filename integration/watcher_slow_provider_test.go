package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const slowProviderCaddyfile = `{
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

// TestWatcherSlowProviderLeavesOthers: one provider (a DashScope upstream whose task reads hang
// for 20 s each, under the 60 s upstream_timeout: a partial outage, connections accepted but not
// answered) holds 24 of mallory's tasks. Alice's task runs on another, healthy DashScope upstream
// with a callback_url; she does not poll. The watcher bounds the reads in flight to one upstream
// (half its concurrency), so the slow upstream's reads hold only part of its polls and alice's
// succeeded callback comes about a second after her create, well within 30 s.
func TestWatcherSlowProviderLeavesOthers(t *testing.T) {
	t.Parallel()
	slowFake, _ := newFakeDashScope(t, "dash-upstream-key")
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/tasks/") {
			select {
			case <-time.After(20 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		slowFake.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { slow.CloseClientConnections(); slow.Close() })
	_, fastURL := newFakeDashScope(t, "dash-upstream-key")
	rc := newReceiver(t, func(int) int { return 200 })
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(slowProviderCaddyfile, t.TempDir(), slow.URL+"/api/v1", fastURL, port), base+"/")

	for i := range 24 {
		r := call(t, "POST", base+taskPath, "mg-mallory", map[string]any{"model": "wan-slow",
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("slow %d", i)}}})
		if r.status != 200 {
			t.Fatalf("mallory's create %d = %d %s", i, r.status, r.body)
		}
		time.Sleep(250 * time.Millisecond) // each due on its own: the polls spread over the watcher's slots
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
		"the watcher sat on another provider's slow reads", got)
}
