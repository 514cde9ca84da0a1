package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSlotOfCreateKilledMidRequestIsGivenBack: instance A is SIGKILLed while a create of a key
// with max_active_tasks 1 waits for its upstream. The slot that create took is not held by any
// task record; it is given back when the reconciler releases the create's hold (at its deadline,
// moved here into the past in Redis instead of waiting 10 minutes), so B's creates go through
// again, and the key still has exactly one slot.
func TestSlotOfCreateKilledMidRequestIsGivenBack(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 1)
	done := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case entered <- struct{}{}:
			default:
			}
		}
		select { // never answers: the create is in flight when A dies
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(done) })
	c := startCluster(t, 2, clusterOptions{gatewayOptions: fmt.Sprintf(`hold_reconcile_interval 200ms
		provider slow {
			base_url %s/api/v3
			api_key slow-key
			models slow-video
			cost 1
		}
		key mg-one-slot {
			account one-slot
			max_active_tasks 1
		}`, hang.URL)})
	a, b := c.instances[0], c.instances[1]
	go func() {
		_, _ = send("POST", a.base+taskPath, "mg-one-slot", `{"model":"slow-video","content":[{"type":"text","text":"x"}]}`)
	}()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the create never reached the upstream")
	}
	a.proc.kill()

	create := func() response {
		return call(t, "POST", b.base+taskPath, "mg-one-slot", `{"model":"seedance-sim","content":[{"type":"text","text":"x"}]}`)
	}
	if r := create(); r.status != 429 || !strings.Contains(string(r.body), "too_many_active_tasks") {
		t.Fatalf("create on B while A's create holds the slot = %d %s, want 429", r.status, r.body)
	}
	// The hold's deadline passes: what the reconciler would find 10 minutes later.
	prefix := "{mg-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "}:" // storage.Redis's key prefix
	holds, err := c.redis.Do("ZRANGE", prefix+"lo", "0", "-1").AsStrSlice()
	if err != nil || len(holds) != 1 {
		t.Fatalf("open holds %v, %v; want the killed create's one", holds, err)
	}
	if err := c.redis.Do("ZADD", prefix+"lo", "0", holds[0]).Error(); err != nil {
		t.Fatal(err)
	}
	var r response
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(200 * time.Millisecond) {
		if r = create(); r.status != 429 {
			break
		}
	}
	if r.status != 200 {
		t.Fatalf("create on B after the killed create's hold was released = %d %s; its slot was never given back", r.status, r.body)
	}
	if r := create(); r.status != 429 {
		t.Fatalf("a second create = %d %s; the key has one slot", r.status, r.body)
	}
	sum := sha256.Sum256([]byte("mg-one-slot"))
	if active, _ := keyUsage(t, b, "key_"+hex.EncodeToString(sum[:])[:12]); active != 1 {
		t.Fatalf("active tasks = %v, want 1", active)
	}
}
