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

// TestSlotOfCreateKilledMidRequestIsGivenBack: instance A is SIGKILLed while two creates of keys
// with max_active_tasks 1 wait for their upstream, one for a priced model and one for a free
// model. The slots those creates took are not held by any task record; the priced one's is given
// back when the reconciler releases the create's hold, the free one's when the reconciler finds
// its slot claim overdue (each at its deadline, moved here into the past in Redis instead of
// waiting 10 minutes), so B's creates go through again, and each key still has exactly one slot.
func TestSlotOfCreateKilledMidRequestIsGivenBack(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 2)
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
		provider slowfree {
			base_url %s/api/v3
			api_key slow-key
			models slow-free-video
		}
		key mg-one-slot {
			account one-slot
			max_active_tasks 1
		}
		key mg-free-slot {
			account free-slot
			max_active_tasks 1
		}`, hang.URL, hang.URL)})
	a, b := c.instances[0], c.instances[1]
	for key, model := range map[string]string{"mg-one-slot": "slow-video", "mg-free-slot": "slow-free-video"} {
		go func() {
			_, _ = send("POST", a.base+taskPath, key, `{"model":"`+model+`","content":[{"type":"text","text":"x"}]}`)
		}()
	}
	for range 2 {
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the creates never reached the upstream")
		}
	}
	a.proc.kill()

	create := func(key string) response {
		return call(t, "POST", b.base+taskPath, key, `{"model":"seedance-sim","content":[{"type":"text","text":"x"}]}`)
	}
	for _, key := range []string{"mg-one-slot", "mg-free-slot"} {
		if r := create(key); r.status != 429 || !strings.Contains(string(r.body), "too_many_active_tasks") {
			t.Fatalf("%s: create on B while A's create holds the slot = %d %s, want 429", key, r.status, r.body)
		}
	}
	// The hold's and the claim's deadlines pass: what the reconciler would find 10 minutes later.
	prefix := "{mg-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "}:" // storage.Redis's key prefix
	for set, what := range map[string]string{"lo": "open holds", "sc": "open slot claims"} {
		open, err := c.redis.Do("ZRANGE", prefix+set, "0", "-1").AsStrSlice()
		if err != nil || len(open) != 1 {
			t.Fatalf("%s %v, %v; want the killed create's one", what, open, err)
		}
		if err := c.redis.Do("ZADD", prefix+set, "0", open[0]).Error(); err != nil {
			t.Fatal(err)
		}
		if set == "lo" { // and the deadline in the hold's record, which the release checks
			if err := c.redis.Do("HSET", prefix+"lh:"+open[0], "d", "0").Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, key := range []string{"mg-one-slot", "mg-free-slot"} {
		var r response
		for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(200 * time.Millisecond) {
			if r = create(key); r.status != 429 {
				break
			}
		}
		if r.status != 200 {
			t.Fatalf("%s: create on B after the killed create's deadline = %d %s; its slot was never given back", key, r.status, r.body)
		}
		if r := create(key); r.status != 429 {
			t.Fatalf("%s: a second create = %d %s; the key has one slot", key, r.status, r.body)
		}
		sum := sha256.Sum256([]byte(key))
		if active, _ := keyUsage(t, b, "key_"+hex.EncodeToString(sum[:])[:12]); active != 1 {
			t.Fatalf("%s: active tasks = %v, want 1", key, active)
		}
	}
}
