package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

const create429Caddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		provider wan {
			base_url %s
			api_key dash-upstream-key
			protocol dashscope
			models wan2.2-t2v-plus
		}
		key mg-alice {
			account alice
		}
		key mg-m1 {
			account mallory1
		}
		key mg-m2 {
			account mallory2
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
		respond 404
	}
}
`

// TestVideoCreate429LeavesReads: a DashScope upstream answers two creates of two other accounts
// with its 429 Throttling.RateQuota and Retry-After: 60, which backs their creates off and, two
// accounts having failed, cools the upstream's creates down for every account. Alice's task,
// already at the provider, is still read meanwhile and succeeds: a create's 429 does not pause
// the upstream's reads (docs/video-providers.md, Pace).
func TestVideoCreate429LeavesReads(t *testing.T) {
	t.Parallel()
	dash, _ := newFakeDashScope(t, "dash-upstream-key")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && bytes.Contains(body, []byte("[burst]")) {
			w.Header().Set("Retry-After", "60")
			writeFakeJSON(w, http.StatusTooManyRequests, map[string]string{"request_id": "req-fake",
				"code": "Throttling.RateQuota", "message": "Requests rate limit exceeded, please try again later."})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		dash.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(create429Caddyfile, t.TempDir(), up.URL+"/api/v1", port), base+"/")

	r := call(t, "POST", base+taskPath, "mg-alice", map[string]any{"model": "wan2.2-t2v-plus",
		"content": []any{map[string]any{"type": "text", "text": "a harbour at night"}}})
	alice := r.field("id")
	if r.status != 200 || alice == "" {
		t.Fatalf("alice's create = %d %s", r.status, r.body)
	}
	for _, key := range []string{"mg-m1", "mg-m2"} {
		r := call(t, "POST", base+taskPath, key, map[string]any{"model": "wan2.2-t2v-plus",
			"content": []any{map[string]any{"type": "text", "text": "[burst]"}}})
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("%s's create = %d %s; want the provider's 429", key, r.status, r.body)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	var last response
	for time.Now().Before(deadline) {
		last = call(t, "GET", base+taskPath+"/"+alice, "mg-alice", nil)
		if last.field("status") == "succeeded" {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	reads := len(dash.log.matching("GET", "/api/v1/tasks/"))
	t.Fatalf("alice's task reads %q 20 s after two other accounts' creates met a 429 (%d reads of it reached the provider; "+
		"the fake finishes a task at its third read): the creates' 429s paused every account's reads", last.field("status"), reads)
}
