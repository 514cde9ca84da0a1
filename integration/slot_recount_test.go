package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const slotRecountCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		provider slow {
			base_url %s/api/v3
			api_key slow-key
			models slow-free slow-priced
			cost slow-priced 1
		}
		provider sim {
			base_url http://127.0.0.1:%d/api/v3
			api_key sim-key
			models seedance-sim
		}
		key mg-free-slot {
			account free-slot
			max_active_tasks 1
		}
		key mg-priced-slot {
			account priced-slot
			max_active_tasks 1
		}
		key mg-other {
			account other
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}

http://127.0.0.1:%d {
	mediagw_simulator {
		queued_for 1h
	}
}
`

// TestSlotsOfCreatesKilledOnBadgerAreGivenBackAtRestart: a Badger gateway is SIGKILLed while
// two creates wait for their upstream, one for a free model (no hold) and one for a priced
// model (its hold in memory only), each of a key with max_active_tasks 1. Their slots reached
// the disk with another request's durable write (a task create of another key) and no task
// record holds them. The restarted gateway recounts the slots from the task records when it
// opens the store, so each key has its one slot again at once, and still only one.
func TestSlotsOfCreatesKilledOnBadgerAreGivenBackAtRestart(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 2)
	done := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			entered <- struct{}{}
		}
		select { // never answers: the creates are in flight when the gateway dies
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(done) })
	dir := t.TempDir()
	port, simPort := freePort(t), freePort(t)
	cfg := fmt.Sprintf(slotRecountCaddyfile, dir, hang.URL, simPort, port, simPort)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	gw := startCaddyProcess(t, cfg, base+"/")

	body := func(model string) string {
		return `{"model":"` + model + `","content":[{"type":"text","text":"x"}]}`
	}
	for key, model := range map[string]string{"mg-free-slot": "slow-free", "mg-priced-slot": "slow-priced"} {
		go func() { _, _ = send("POST", base+taskPath, key, body(model)) }()
	}
	for range 2 {
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the creates never reached the upstream")
		}
	}
	// Another key's create writes (and syncs) its record, and the slot counters with it.
	if r := call(t, "POST", base+taskPath, "mg-other", body("seedance-sim")); r.status != 200 {
		t.Fatalf("another key's create = %d %s", r.status, r.body)
	}
	for _, key := range []string{"mg-free-slot", "mg-priced-slot"} {
		if r := call(t, "POST", base+taskPath, key, body("seedance-sim")); r.status != 429 {
			t.Fatalf("%s: a second create while the first is in flight = %d %s; want 429", key, r.status, r.body)
		}
	}
	gw.kill()

	startCaddyProcess(t, cfg, base+"/")
	for _, key := range []string{"mg-free-slot", "mg-priced-slot"} {
		r := call(t, "POST", base+taskPath, key, body("seedance-sim"))
		if r.status != 200 {
			t.Fatalf("%s: a create after the restart = %d %s; the killed create's slot was never given back", key, r.status, r.body)
		}
		if r := call(t, "POST", base+taskPath, key, body("seedance-sim")); r.status != 429 || !strings.Contains(string(r.body), "too_many_active_tasks") {
			t.Fatalf("%s: a second create after the restart = %d %s; the key has one slot", key, r.status, r.body)
		}
	}
}
