package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/handlers/simulator"
)

// Three gateways on one redis-server, used as a hostile client would: no balancer, every
// request of one task goes to another instance than the one before, and the watchers of all
// three race the clients' polls and cancels.

// keyUsage reads a key's usage through one instance's admin API.
func keyUsage(t *testing.T, in *instance, id string) (active, quotaUsed float64) {
	t.Helper()
	r := call(t, "GET", "http://"+in.admin+"/mediagw/keys/"+id+"/usage", "", nil)
	if r.status != 200 {
		t.Fatalf("usage of %s on %s = %d %s", id, in.name, r.status, r.body)
	}
	m := r.json(t)
	active, _ = m["active_tasks"].(float64)
	quotaUsed, _ = m["quota_used"].(float64)
	return active, quotaUsed
}

// TestInstancesShareActiveSlotsRefundsAndCallbacks: creates raced over three instances against
// max_active_tasks 3 never hold more than 3 slots; every task, whether it succeeds, fails or is
// cancelled on another instance than the one that created it, gives its slot back once, the
// failed and cancelled ones their cost back once (refund_unsuccessful_tasks), and each status
// of each task reaches the callback receiver once, signed.
func TestInstancesShareActiveSlotsRefundsAndCallbacks(t *testing.T) {
	c := startCluster(t, 3, clusterOptions{queuedFor: "1s", runningFor: "1s", watchInterval: "200ms",
		gatewayOptions: "refund_unsuccessful_tasks"})
	rc := newReceiver(t, func(int) int { return 200 })
	r := call(t, "POST", "http://"+c.instances[0].admin+"/mediagw/keys", "",
		`{"account":"slots","quota":1000,"max_active_tasks":3}`)
	keyID, secret := r.field("id"), r.field("key")
	if r.status != 201 || keyID == "" || secret == "" {
		t.Fatalf("creating the key on A = %d %s", r.status, r.body)
	}

	// The sampler reads the slot count on every instance while the clients work.
	var (
		maxActive atomic.Int64
		stop      = make(chan struct{})
		sampled   sync.WaitGroup
	)
	sampled.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			r, err := send("GET", "http://"+c.instances[i%3].admin+"/mediagw/keys/"+keyID+"/usage", "", nil)
			if err != nil || r.status != 200 {
				continue
			}
			var u struct {
				Active int64 `json:"active_tasks"`
			}
			decodeJSONQuiet(r.body, &u)
			if u.Active > maxActive.Load() {
				maxActive.Store(u.Active)
			}
		}
	})

	const want = 18 // tasks accepted in all: a third succeed, a third fail, a third are cancelled
	var (
		next     atomic.Int64
		mu       sync.Mutex
		final    = map[string]string{} // task id → its terminal status
		wantEnd  = map[string]string{}
		bad      []string
		workers  sync.WaitGroup
		deadline = time.Now().Add(60 * time.Second)
	)
	fail := func(format string, a ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	for w := range 6 {
		workers.Go(func() {
			for i := w; time.Now().Before(deadline); i++ {
				n := next.Load()
				if n >= want {
					return
				}
				kind := n % 3
				prompt := "fleet"
				if kind == 1 {
					prompt += " " + simulator.FailMarker
				}
				creator := c.instances[i%3]
				r, err := send("POST", creator.base+taskPath, secret, fmt.Sprintf(
					`{"model":"seedance-sim","content":[{"type":"text","text":%q}],"callback_url":%q}`, prompt, rc.URL))
				switch {
				case err != nil:
					fail("create on %s: %v", creator.name, err)
					return
				case r.status == 429 && r.field("code") == "too_many_active_tasks":
					time.Sleep(50 * time.Millisecond)
					continue
				case r.status != 200 || r.field("id") == "":
					fail("create on %s = %d %s", creator.name, r.status, r.body)
					return
				}
				next.Add(1) // past want when other workers' tasks were accepted at once: they count too
				id := r.field("id")
				end := map[int64]string{0: "succeeded", 1: "failed", 2: "cancelled"}[kind]
				if kind == 2 {
					other := c.instances[(i+1)%3]
					r, err := send("DELETE", other.base+taskPath+"/"+id, secret, nil)
					if err != nil || r.status != 200 {
						// The task left the queue first (the machine is loaded): it succeeds.
						end = "succeeded"
					}
				}
				mu.Lock()
				wantEnd[id] = end
				mu.Unlock()
				// Poll on the other instances until the task ends, racing their watchers.
				for j := 1; ; j++ {
					if time.Now().After(deadline) {
						fail("task %s did not end", id)
						return
					}
					poller := c.instances[(i+j)%3]
					r, err := send("GET", poller.base+taskPath+"/"+id, secret, nil)
					if err != nil || r.status != 200 {
						fail("query of %s on %s = %d %s %v", id, poller.name, r.status, r.body, err)
						return
					}
					if s := r.field("status"); s != "queued" && s != "running" {
						mu.Lock()
						final[id] = s
						mu.Unlock()
						break
					}
					time.Sleep(150 * time.Millisecond)
				}
			}
		})
	}
	workers.Wait()
	if len(bad) > 0 {
		close(stop)
		sampled.Wait()
		t.Fatalf("%d client errors, e.g. %s", len(bad), bad[0])
	}
	if len(final) < want {
		t.Fatalf("%d tasks ended, want %d", len(final), want)
	}
	succeeded := 0
	for id, s := range final {
		if s != wantEnd[id] {
			t.Errorf("task %s ended %s, want %s", id, s, wantEnd[id])
		}
		if s == "succeeded" {
			succeeded++
		}
	}

	// Every slot comes back, and every unsuccessful task's cost, exactly once: the usage
	// settles at zero active tasks and at one unit per succeeded task, and stays there while
	// the three watchers keep running.
	waitFor(t, "the slots given back", func() bool {
		active, used := keyUsage(t, c.instances[2], keyID)
		return active == 0 && used == float64(succeeded)
	})
	time.Sleep(time.Second) // five watcher intervals
	for _, in := range c.instances {
		if active, used := keyUsage(t, in, keyID); active != 0 || used != float64(succeeded) {
			t.Fatalf("usage on %s: %v active, %v quota used; want 0 and %d (%d tasks)", in.name, active, used, succeeded, len(final))
		}
	}
	close(stop)
	sampled.Wait()
	if m := maxActive.Load(); m > 3 {
		t.Fatalf("%d tasks held slots at once; max_active_tasks is 3", m)
	}

	// Callbacks: every task's terminal status arrives, each status of a task once, signed with
	// the account's one secret, whichever instance's watcher or request finished it.
	waitFor(t, "every terminal callback", func() bool {
		got := 0
		for _, d := range rc.seen() {
			var m struct {
				ID string `json:"id"`
			}
			decodeJSONQuiet(d.body, &m)
			if final[m.ID] != "" && d.status == final[m.ID] {
				got++
			}
		}
		return got >= len(final)
	})
	time.Sleep(time.Second) // room for a duplicate to show up
	r = call(t, "GET", "http://"+c.instances[1].admin+"/mediagw/accounts/slots", "", nil)
	whsec, _ := r.json(t)["webhook_secret"].(string)
	seen := map[string]int{}
	for _, d := range rc.seen() {
		if err := callbacks.Verify(whsec, d.id, d.timestamp, d.signature, d.body, 5*time.Minute); err != nil {
			t.Fatalf("callback %s does not verify: %v", d.body, err)
		}
		var m struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(d.body, &m); err != nil || final[m.ID] == "" {
			t.Fatalf("callback for an unknown task: %s", d.body)
		}
		seen[m.ID+"/"+d.status]++
	}
	for ev, n := range seen {
		if n != 1 {
			t.Errorf("event %s delivered %d times", ev, n)
		}
		if s := ev[strings.IndexByte(ev, '/')+1:]; s == "cancelled" && final[ev[:strings.IndexByte(ev, '/')]] != "cancelled" {
			t.Errorf("event %s for a task that ended %s", ev, final[ev[:strings.IndexByte(ev, '/')]])
		}
	}
}
