package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// TestPricedRequestsLedgerSurvivesSIGKILLUnderLoad: a gateway on Badger killed with SIGKILL
// while 12 clients keep sending priced chats, then started again. Every chat answered 200 before
// the kill was settled (a request's settlement is committed before its answer ends), no hold is
// in the ledger twice or without its settlement (the requests in flight were in memory only,
// and are lost as released), nothing stays held, and the ledger sums to the balance; the
// restarted gateway takes and settles chats again on that balance.
func TestPricedRequestsLedgerSurvivesSIGKILLUnderLoad(t *testing.T) {
	t.Parallel()
	const parallel, after = 12, 8
	const credit, charge = 100_000_000, 15_000 // 5 input and 5 output tokens: 0.005 + 0.01
	cfg, ready, dir, port := pricedChatStore(t, credit)
	ctx := context.Background()

	url := fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port)
	const body = `{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":10}`
	gw := startCaddyProcess(t, cfg, ready)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for range 2000 { // bounded; the kill ends it sooner
				r, err := send("POST", url, "mg-killed-chat", body)
				if err != nil {
					return // killed
				}
				if r.status != 200 {
					t.Errorf("chat = %d %s", r.status, r.body)
					return
				}
				answered.Add(1)
			}
		})
	}
	for deadline := time.Now().Add(20 * time.Second); answered.Load() < 200 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	gw.kill() // SIGKILL, with requests in flight
	wg.Wait()
	if answered.Load() < 200 {
		t.Fatalf("only %d chats answered before the kill", answered.Load())
	}

	gw = startCaddyProcess(t, cfg, ready)
	for i := range after {
		if r, err := send("POST", url, "mg-killed-chat", body); err != nil || r.status != 200 {
			t.Fatalf("chat %d after the restart = %+v, %v", i, r, err)
		}
	}
	gw.kill()

	store := openBadgerStore(t, dir)
	defer func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	}()
	var sum int64
	holds, settled := map[string]int{}, map[string]int{}
	n := 0
	for cursor := ""; ; {
		entries, next, err := store.LedgerPage(ctx, "killed", cursor, storage.MaxLedgerPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			n++
			sum += e.Amount
			if e.BalanceAfter != sum {
				t.Fatalf("entry %+v: balance after %d; the entries before sum to %d", e, e.BalanceAfter, sum)
			}
			switch e.Kind {
			case storage.EntryHold:
				holds[e.HoldID]++
			case storage.EntrySettle:
				settled[e.HoldID]++
				if e.Charged != charge {
					t.Errorf("hold %s settled at %d, want %d", e.HoldID, e.Charged, charge)
				}
			case storage.EntryCredit:
			default:
				t.Errorf("entry %+v: a request's hold ends only by its settlement here", e)
			}
		}
		if cursor = next; next == "" {
			break
		}
	}
	for id, c := range holds {
		if c != 1 || settled[id] != 1 {
			t.Errorf("hold %s: %d hold entries and %d settlements; want one of each", id, c, settled[id])
		}
	}
	if len(settled) != len(holds) {
		t.Errorf("%d holds settled, %d held", len(settled), len(holds))
	}
	if got, want := int64(len(settled)), answered.Load()+after; got < want || got > want+parallel {
		t.Errorf("%d chats settled in the ledger; %d were answered 200 (and at most %d more in flight)", got, want, parallel)
	}
	bal, err := store.Balance(ctx, "killed")
	if err != nil || bal.Amount != sum || bal.Amount != credit-int64(len(settled))*charge || bal.Held != 0 {
		t.Fatalf("balance %+v, %v; the ledger (%d entries) sums to %d, %d settled", bal, err, n, sum, len(settled))
	}
	t.Logf("%d chats answered before the kill, %d settled in all", answered.Load(), len(settled))
}
