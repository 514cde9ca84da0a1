package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/storage"
)

// billedPrices prices the cluster's model at 0.01 per second (a default 5-second task holds
// 0.05, and the simulator reports 5 s), and has a key of account "paying" (credited in the
// test) and a key with a budget of three such tasks.
const billedPrices = `price seedance-sim {
			second 0.01
		}
		key mg-paying {
			account paying
		}
		key mg-three {
			account three
			budget 0.15
		}`

// clusterLedger opens the cluster's Redis store from the test, to read the ledger as the
// gateways wrote it.
func clusterLedger(t *testing.T, c *cluster) storage.Store {
	t.Helper()
	prefix := "mg-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: c.redis.URL(), KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ledgerSum is the sum of an account's ledger entries, and how many of each kind it has.
func ledgerSum(t *testing.T, s storage.Store, account string) (int64, map[string]int) {
	t.Helper()
	sum, kinds, after := int64(0), map[string]int{}, ""
	for {
		entries, next, err := s.LedgerPage(context.Background(), account, after, storage.MaxLedgerPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			sum += e.Amount
			kinds[e.Kind]++
		}
		if next == "" {
			return sum, kinds
		}
		after = next
	}
}

// TestInstancesHoldExactlyTheBalance: 300 parallel video creates spread over three instances on
// one redis-server, against an account balance (credited through one instance's admin API)
// that fits exactly 100 estimates, accept exactly 100 (the others get 402); once every task has
// finished and settled, the account's ledger sums to its balance: the credit of 5 less 100
// tasks of 5 s at 0.01, each held once and settled once.
func TestInstancesHoldExactlyTheBalance(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{queuedFor: "1s", runningFor: "1s", watchInterval: "200ms", gatewayOptions: billedPrices})
	// The credit is sent 24 times at once, 8 times to each instance, with one Idempotency-Key:
	// the account is credited once and every retry answers that credit's entry. Then 6 more at
	// once with that key and another amount are each a 409.
	credits := func(n int, body string) []response {
		var wg sync.WaitGroup
		answers := make([]response, n)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", "http://"+c.instances[i%3].admin+"/mediagw/accounts/paying/credit", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "credit-1")
				answers[i], _ = sendRequest(req)
			}()
		}
		wg.Wait()
		return answers
	}
	for i, r := range credits(24, `{"amount":"5","note":"test"}`) {
		if r.status != 200 || !strings.Contains(string(r.body), `"id":"1"`) || !strings.Contains(string(r.body), `"balance_after":"5"`) {
			t.Fatalf("credit retry %d = %d %s; want the one credit's entry", i, r.status, r.body)
		}
	}
	for i, r := range credits(6, `{"amount":"6","note":"test"}`) {
		if r.status != 409 {
			t.Fatalf("credit %d with a used key and another amount = %d %s; want 409", i, r.status, r.body)
		}
	}
	if accepted, refused := raceCreates(t, c, 300, "mg-paying"); accepted != 100 || refused != 200 {
		t.Fatalf("accepted %d, refused %d; want exactly 100 and 200", accepted, refused)
	}
	ledger := clusterLedger(t, c)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := ledger.Balance(context.Background(), "paying")
		if err != nil {
			t.Fatal(err)
		}
		sum, kinds := ledgerSum(t, ledger, "paying")
		if b.Held == 0 && kinds[storage.EntrySettle] == 100 {
			if sum != b.Amount || b.Amount != 0 || kinds[storage.EntryHold] != 100 || kinds[storage.EntryRelease] != 0 || kinds[storage.EntryCredit] != 1 {
				t.Fatalf("ledger sums to %d with %v; balance %+v; want 0 (5 less 100 × 0.05) in a credit, 100 holds and 100 settlements", sum, kinds, b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: balance %+v, entries %v; want every hold settled", b, kinds)
		}
		time.Sleep(250 * time.Millisecond)
	}
	// The balance is spent for good: one more create is 402.
	if r := call(t, "POST", c.instances[2].base+taskPath, "mg-paying", `{"model":"seedance-sim","content":[{"type":"text","text":"more"}]}`); r.status != 402 {
		t.Fatalf("a create past the spent balance = %d %s", r.status, r.body)
	}
}

// TestUnsuccessfulTasksReleaseOnce: of three tasks raced over three instances, with the
// watchers and a client's polls on every instance racing to see each finish, the failed and the
// cancelled one release their holds once and the succeeded one settles once; the key's budget
// then has exactly the failed and cancelled tasks' estimates back.
func TestUnsuccessfulTasksReleaseOnce(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{queuedFor: "1s", runningFor: "1s", watchInterval: "200ms", gatewayOptions: billedPrices})
	a, b, cc := c.instances[0], c.instances[1], c.instances[2]
	succeeded := createTask(t, a, "mg-three", "")
	r := call(t, "POST", b.base+taskPath, "mg-three", `{"model":"seedance-sim","content":[{"type":"text","text":"`+simulator.FailMarker+`"}]}`)
	failed := r.field("id")
	if r.status != 200 || failed == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	cancelled := createTask(t, cc, "mg-three", "")
	if r := call(t, "DELETE", a.base+taskPath+"/"+cancelled, "mg-three", nil); r.status != 200 {
		t.Fatalf("cancel = %d %s", r.status, r.body)
	}
	want := map[string]string{succeeded: "succeeded", failed: "failed", cancelled: "cancelled"}
	deadline := time.Now().Add(60 * time.Second)
	var wg sync.WaitGroup
	var sawAll atomic.Int64
	for _, in := range c.instances {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				done := 0
				for id, status := range want {
					r, err := send("GET", in.base+taskPath+"/"+id, "mg-three", nil)
					if err == nil && r.status == 200 && r.field("status") == status {
						done++
					}
				}
				if done == len(want) {
					sawAll.Add(1)
					return
				}
			}
		})
	}
	wg.Wait()
	if sawAll.Load() != 3 {
		t.Fatalf("%d of 3 instances answered every task's final status within 60 s", sawAll.Load())
	}
	ledger := clusterLedger(t, c)
	for {
		b, err := ledger.Balance(context.Background(), "three")
		if err != nil {
			t.Fatal(err)
		}
		sum, kinds := ledgerSum(t, ledger, "three")
		if b.Held == 0 {
			if kinds[storage.EntryHold] != 3 || kinds[storage.EntrySettle] != 1 || kinds[storage.EntryRelease] != 2 || sum != b.Amount || b.Amount != -50_000 {
				t.Fatalf("ledger %v sums to %d, balance %+v; want 3 holds, 1 settlement, 2 releases, -0.05", kinds, sum, b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: balance %+v, entries %v; want every hold ended", b, kinds)
		}
		time.Sleep(250 * time.Millisecond)
	}
	// 0.05 of 0.15 is spent: two more 5-second tasks fit, a third does not.
	createTask(t, b, "mg-three", "")
	createTask(t, cc, "mg-three", "")
	if r := call(t, "POST", a.base+taskPath, "mg-three", `{"model":"seedance-sim","content":[{"type":"text","text":"x"}]}`); r.status != 402 {
		t.Fatalf("a create past the budget = %d %s", r.status, r.body)
	}
}
