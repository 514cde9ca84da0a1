package integration

import (
	"encoding/json"
	"fmt"
	"strconv"
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
// quotaUsed is the money the key was charged, a decimal string (the cluster's model costs 1 per
// task: cost 1, the price {request 1}).
func keyUsage(t *testing.T, in *instance, id string) (active float64, quotaUsed string) {
	t.Helper()
	r := call(t, "GET", "http://"+in.admin+"/mediagw/keys/"+id+"/usage", "", nil)
	if r.status != 200 {
		t.Fatalf("usage of %s on %s = %d %s", id, in.name, r.status, r.body)
	}
	m := r.json(t)
	active, _ = m["active_tasks"].(float64)
	quotaUsed, _ = m["quota_used"].(string)
	return active, quotaUsed
}

// TestInstancesShareActiveSlotsRefundsAndCallbacks: creates raced over three instances against
// max_active_tasks 3 never hold more than 3 slots; every task, whether it succeeds, fails or is
// cancelled on another instance than the one that created it, gives its slot back once, the
// failed and cancelled ones their cost back once (refund_unsuccessful_tasks), and each status
// of each task reaches the callback receiver once, signed.
func TestInstancesShareActiveSlotsRefundsAndCallbacks(t *testing.T) {
	t.Parallel()
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

	const want = 12 // tasks accepted in all: a third succeed, a third fail, a third are cancelled
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
	// Each instance counts what it charges in its own meter and flushes it to the store every
	// 2 s, and reads the others' counts from the store: wait until every instance shows all of
	// it, then check that it stays.
	waitFor(t, "the slots given back", func() bool {
		for _, in := range c.instances {
			if active, used := keyUsage(t, in, keyID); active != 0 || used != strconv.Itoa(succeeded) {
				return false
			}
		}
		return true
	})
	// A count charged twice would reach the store by the next flush: wait past one (2 s,
	// caddymodule.usageFlushInterval) and a few watcher intervals.
	time.Sleep(2*time.Second + time.Second)
	for _, in := range c.instances {
		if active, used := keyUsage(t, in, keyID); active != 0 || used != strconv.Itoa(succeeded) {
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
	type event struct{ task, status string }
	seen := map[event]int{}
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
		seen[event{m.ID, d.status}]++
	}
	for ev, n := range seen {
		if n != 1 {
			t.Errorf("event %s/%s delivered %d times", ev.task, ev.status, n)
		}
		if ev.status == "cancelled" && final[ev.task] != "cancelled" {
			t.Errorf("a cancelled event for task %s, which ended %s", ev.task, final[ev.task])
		}
	}
}

// answersWithin polls url with key on in until it answers status, failing when a request sent
// more than bound after the call began still gets another answer. The request's send time is
// what counts: on a loaded machine an answer may come back late, and a stale answer to a request
// sent in time is allowed.
func answersWithin(t *testing.T, in *instance, method, url, key, body string, status int, bound time.Duration, what string) {
	t.Helper()
	start := time.Now()
	for {
		sent := time.Now()
		r := call(t, method, in.base+url, key, body)
		if r.status == status {
			return
		}
		if sent.Sub(start) > bound {
			t.Fatalf("%s: %s still answers %d %s to a request sent %v after the change", what, in.name, r.status, r.body, sent.Sub(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// createRefusedWithin is answersWithin for a task create that in is sent until it answers
// status. A create that in still accepts (it has not seen the change yet) makes a task: their
// ids are returned, for the caller to cancel (cancelAll) before a later step counts slots or
// money.
func createRefusedWithin(t *testing.T, in *instance, key, body string, status int, bound time.Duration, what string) (made []string) {
	t.Helper()
	start := time.Now()
	for {
		sent := time.Now()
		r := call(t, "POST", in.base+taskPath, key, body)
		if r.status == status {
			return made
		}
		if r.status == 200 {
			made = append(made, r.field("id"))
		}
		if sent.Sub(start) > bound {
			t.Fatalf("%s: %s still answers %d %s to a create sent %v after the change", what, in.name, r.status, r.body, sent.Sub(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cancelAll cancels the tasks ids on in.
func cancelAll(t *testing.T, in *instance, key string, ids []string) {
	t.Helper()
	for _, id := range ids {
		if r := call(t, "DELETE", in.base+taskPath+"/"+id, key, nil); r.status != 200 {
			t.Fatalf("cancelling %s on %s = %d %s", id, in.name, r.status, r.body)
		}
	}
}

// TestAdminChangesOnOneInstanceHoldOnAll: an account disabled, and a key's quota, rate and
// max_active_tasks changed, through A's admin API hold on A from the next request and on B
// within the one second docs/instances.md states.
func TestAdminChangesOnOneInstanceHoldOnAll(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 2, clusterOptions{})
	a, b := c.instances[0], c.instances[1]
	admin := "http://" + a.admin + "/mediagw"
	// The key has a quota from the start: a quota set later counts from then on.
	r := call(t, "POST", admin+"/keys", "", `{"account":"acme","quota":1000}`)
	id, secret := r.field("id"), r.field("key")
	if r.status != 201 || id == "" || secret == "" {
		t.Fatalf("creating a key on A = %d %s", r.status, r.body)
	}
	create := `{"model":"seedance-sim","content":[{"type":"text","text":"admin"}]}`
	// Both instances have the key and the account cached from here on.
	first := createTask(t, a, secret, "")
	createTask(t, b, secret, "")

	// The account: disabled on A refuses on A at once and on B within 1s; enabled again, both
	// let the key in.
	if r := call(t, "PATCH", admin+"/accounts/acme", "", `{"disabled":true}`); r.status != 200 {
		t.Fatalf("disabling the account on A = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", a.base+"/v1/models", secret, nil); r.status != 403 || !strings.Contains(string(r.body), "account_disabled") {
		t.Fatalf("A right after disabling the account: %d %s", r.status, r.body)
	}
	made := createRefusedWithin(t, b, secret, create, 403, time.Second, "account disabled on A")
	if r := call(t, "PATCH", admin+"/accounts/acme", "", `{"disabled":false}`); r.status != 200 {
		t.Fatalf("enabling the account on A = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", a.base+"/v1/models", secret, nil); r.status != 200 {
		t.Fatalf("A right after enabling the account: %d %s", r.status, r.body)
	}
	answersWithin(t, b, "GET", "/v1/models", secret, "", 200, time.Second, "account enabled on A")
	cancelAll(t, b, secret, made) // tasks B made before it saw the account disabled

	// max_active_tasks set below the two unfinished tasks: the next create is refused on A
	// at once and on B within 1s.
	if r := call(t, "PATCH", admin+"/keys/"+id, "", `{"max_active_tasks":2}`); r.status != 200 {
		t.Fatalf("limiting active tasks on A = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", a.base+taskPath, secret, create); r.status != 429 || r.field("code") != "too_many_active_tasks" {
		t.Fatalf("A right after max_active_tasks 2 with 2 unfinished tasks: %d %s", r.status, r.body)
	}
	cancelAll(t, b, secret, createRefusedWithin(t, b, secret, create, 429, time.Second, "max_active_tasks set on A"))
	// A task created before the limit, cancelled on B, gives its slot back: A accepts one more.
	if r := call(t, "DELETE", b.base+taskPath+"/"+first, secret, nil); r.status != 200 {
		t.Fatalf("cancel on B = %d %s", r.status, r.body)
	}
	// The cancel is confirmed by a read of the task, which another instance's watcher may have
	// stored first: then that watcher gives the slot back, just after the cancel's answer. A
	// create refused meanwhile (429, nothing charged) is sent again.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := call(t, "POST", a.base+taskPath, secret, create)
		if r.status == 200 {
			break
		}
		if r.status != 429 || time.Now().After(deadline) {
			t.Fatalf("create on A after the cancel on B = %d %s", r.status, r.body)
		}
	}
	// Two tasks run, each holding 1 (cost 1); the cancelled one was released: nothing is
	// charged yet.
	if active, used := keyUsage(t, b, id); active != 2 || used != "0" {
		t.Fatalf("usage after 3 creates, 1 cancel and refused creates: %v active, %v charged; want 2 and 0", active, used)
	}

	// A quota (a budget) equal to what is held: refused with 402 on both.
	if r := call(t, "PATCH", admin+"/keys/"+id, "", `{"max_active_tasks":null,"quota":2}`); r.status != 200 {
		t.Fatalf("setting the quota on A = %d %s", r.status, r.body)
	}
	if r := call(t, "POST", a.base+taskPath, secret, create); r.status != 402 {
		t.Fatalf("A right after quota 2 with 2 held: %d %s", r.status, r.body)
	}
	cancelAll(t, b, secret, createRefusedWithin(t, b, secret, create, 402, time.Second, "quota set on A"))

	// A rate of 1 per hour: after one more request on A, B refuses within 1s.
	if r := call(t, "PATCH", admin+"/keys/"+id, "", `{"quota":null,"rate":{"requests":1,"window":"1h"}}`); r.status != 200 {
		t.Fatalf("setting the rate on A = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", a.base+"/v1/models", secret, nil); r.status != 200 {
		t.Fatalf("first request under the rate on A: %d %s", r.status, r.body)
	}
	if r := call(t, "GET", a.base+"/v1/models", secret, nil); r.status != 429 {
		t.Fatalf("second request under a rate of 1/h on A: %d %s", r.status, r.body)
	}
	answersWithin(t, b, "GET", "/v1/models", secret, "", 429, time.Second, "rate set on A")
}

// TestCallbackOfInstanceKilledMidDeliveryArrivesOnce: A is SIGKILLed while its delivery of a
// task's first event hangs at the receiver; B, started afterwards, delivers that event once
// A's lease on it runs out, under the same webhook-id, and the receiver accepts each event of
// the task once.
func TestCallbackOfInstanceKilledMidDeliveryArrivesOnce(t *testing.T) {
	t.Parallel()
	// A delivery attempt may take 3 s, so A's lease on an event it is delivering is 9 s (the
	// default 10 s attempt would make the test wait 30 s for B). The attempt that hangs is
	// stopped by A's death well within 3 s.
	c := startCluster(t, 1, clusterOptions{queuedFor: "1h", callbackOptions: "attempt_timeout 3s"})
	hang := make(chan struct{})
	rc := newReceiver(t, func(n int) int {
		if n == 1 {
			<-hang // A's attempt: no answer until A is gone
			return 503
		}
		return 200
	})
	t.Cleanup(func() { close(hang) }) // runs before the receiver closes
	a := c.instances[0]
	id := createTask(t, a, "mg-alice", fmt.Sprintf(`,"callback_url":%q`, rc.URL))
	waitFor(t, "A's delivery attempt", func() bool { return len(rc.seen()) == 1 })
	a.proc.kill()

	b := c.launch(t)
	// The lease is 3 delivery timeouts (9 s): B takes the event over after it.
	deadline := time.Now().Add(60 * time.Second)
	for len(rc.seen()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no delivery after A died mid delivery")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // room for a duplicate
	s := rc.seen()
	if len(s) != 2 || s[0].id != s[1].id || s[1].status != "queued" {
		t.Fatalf("attempts after A died mid delivery: %d (%+v)", len(s), s)
	}
	if r := call(t, "GET", b.base+taskPath+"/"+id, "mg-alice", nil); r.status != 200 || r.field("status") != "queued" {
		t.Fatalf("task on B = %d %s", r.status, r.body)
	}
}

// TestConcurrentCancelsOnThreeInstancesRefundOnce: the same DELETE sent to three instances at
// once cancels the task (and may then delete it) and gives its slot and its cost back once.
func TestConcurrentCancelsOnThreeInstancesRefundOnce(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{gatewayOptions: "refund_unsuccessful_tasks"})
	r := call(t, "POST", "http://"+c.instances[0].admin+"/mediagw/keys", "",
		`{"account":"cancels","quota":100,"max_active_tasks":10}`)
	keyID, secret := r.field("id"), r.field("key")
	if r.status != 201 || keyID == "" || secret == "" {
		t.Fatalf("creating the key on A = %d %s", r.status, r.body)
	}
	const n = 6
	var ids []string
	for i := range n {
		ids = append(ids, createTask(t, c.instances[i%3], secret, ""))
	}
	if active, _ := keyUsage(t, c.instances[1], keyID); active != n {
		t.Fatalf("after %d creates: %v active", n, active)
	}
	if r := call(t, "GET", "http://"+c.instances[1].admin+"/mediagw/accounts/cancels/balance", "", nil); r.field("held") != strconv.Itoa(n) {
		t.Fatalf("after %d creates at 1 each: balance %s, want %d held", n, r.body, n)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		status = map[int]int{}
	)
	for _, id := range ids {
		for _, in := range c.instances {
			wg.Go(func() {
				r, err := send("DELETE", in.base+taskPath+"/"+id, secret, nil)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					status[-1]++
					return
				}
				status[r.status]++
			})
		}
	}
	wg.Wait()
	if status[-1] > 0 || status[500] > 0 || status[200] < n {
		t.Fatalf("answers to %d cancels of %d tasks: %v", 3*n, n, status)
	}
	// A DELETE that comes after the cancel deletes the cancelled task, as documented.
	for _, id := range ids {
		r := call(t, "GET", c.instances[2].base+taskPath+"/"+id, secret, nil)
		if r.field("status") != "cancelled" && r.field("code") != "task_not_exist" {
			t.Fatalf("task %s after the cancels: %d %s", id, r.status, r.body)
		}
	}
	time.Sleep(time.Second) // a watcher interval: a second refund or release would show now
	for _, in := range c.instances {
		if active, used := keyUsage(t, in, keyID); active != 0 || used != "0" {
			t.Fatalf("usage on %s after the cancels: %v active, %v charged; want 0 and 0 (answers %v)", in.name, active, used, status)
		}
		// Each hold was released once: a second release would show as a balance above 0.
		if r := call(t, "GET", "http://"+in.admin+"/mediagw/accounts/cancels/balance", "", nil); r.field("held") != "0" || r.field("balance") != "0" {
			t.Fatalf("balance on %s after the cancels: %s, want 0 held and a balance of 0", in.name, r.body)
		}
	}
}
