package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdempotencyKeyOfKilledGatewayIsFreedByItsLease: gateway A takes an Idempotency-Key on a
// create that waits for its upstream and is SIGKILLed. A retry of that key through gateway B
// waits while A's lease lives (a retry waits up to 10 s for a running first request), and runs
// the create once the lease ran out (3s here), calling the upstream exactly once after the kill.
func TestIdempotencyKeyOfKilledGatewayIsFreedByItsLease(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 1)
	done := make(chan struct{})
	var hung atomic.Bool
	var after atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if hung.CompareAndSwap(false, true) {
			entered <- struct{}{}
			select { // never answers: the create is in flight when A dies
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		after.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"cgt-after-kill"}`)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(done) })
	c := startCluster(t, 2, clusterOptions{gatewayOptions: fmt.Sprintf(`idempotency_lease 3s
		provider slow {
			base_url %s/api/v3
			api_key slow-key
			models slow-video
		}
		key mg-idem-crash {
			account idem-crash
		}`, up.URL)})
	a, b := c.instances[0], c.instances[1]
	create := func(base string) (int, string) {
		req, _ := http.NewRequest("POST", base+taskPath, strings.NewReader(`{"model":"slow-video","content":[{"type":"text","text":"x"}]}`))
		req.Header.Set("Authorization", "Bearer mg-idem-crash")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "crash-1")
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	go create(a.base)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the create never reached the upstream")
	}
	a.proc.kill()
	killed := time.Now()
	if st, body := create(b.base); st != 200 || time.Since(killed) < time.Second {
		// A renews its 3s lease every second: at least 2s of it were left at the kill.
		t.Fatalf("retry on B right after the kill = %d %s after %v, want 200 once A's lease ran out", st, body, time.Since(killed))
	}
	if st, body := create(b.base); st != 200 || !strings.Contains(body, "cgt-") {
		t.Fatalf("replay = %d %s", st, body)
	}
	if n := after.Load(); n != 1 {
		t.Fatalf("upstream calls after the kill = %d, want 1", n)
	}
}
