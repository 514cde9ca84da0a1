package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// The store closed while goroutines hold, settle, release and bind on one account and key
// budget, then opened again: the ledger sums to the balance, Held is the sum of the holds it
// leaves open, OverdueHolds lists exactly the open unbound ones, and the key's counter is what
// the ledger took for that key (its open holds and its charges).
func TestBadgerBookCloseUnderLoadThenReopen(t *testing.T) {
	dir := t.TempDir()
	b := openBook(t, dir)
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100000, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	budget := Budget{Limit: 50000, Period: BudgetDay}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 11))
			for i := 0; ; i++ {
				id := fmt.Sprintf("h%d-%d", g, i)
				amount := int64(1 + r.IntN(9))
				h := Hold{ID: id, NewID: true, Account: "acme", KeyID: "k", Amount: amount, Budget: budget,
					Deadline: bookNow.Add(time.Second), Transient: r.IntN(2) == 0}
				if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
					return // closed
				}
				switch r.IntN(4) {
				case 0: // left open
				case 1:
					if b.BindHold(ctx, id, "task-"+id) != nil {
						return
					}
				case 2:
					if _, err := b.Release(ctx, id, "", bookNow); err != nil {
						return
					}
				default:
					if _, err := b.Settle(ctx, id, int64(r.IntN(int(amount)+1)), bookNow); err != nil {
						return
					}
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	c := openBook(t, dir)
	defer c.Close()
	bal, entries := sumsUp(t, c, "acme")
	open := map[string]int64{}
	var taken int64
	for _, e := range entries {
		switch e.Kind {
		case EntryHold:
			open[e.HoldID] = -e.Amount
			taken -= e.Amount
		case EntrySettle, EntryRelease:
			if _, ok := open[e.HoldID]; !ok {
				t.Fatalf("entry %+v ends a hold the ledger has not taken", e)
			}
			delete(open, e.HoldID)
			taken -= e.Amount
		}
	}
	var held int64
	unbound := map[string]bool{}
	for id, amount := range open {
		held += amount
		h, err := c.HoldByID(ctx, id)
		if err != nil || h.State != HoldOpen {
			t.Fatalf("hold %s, open in the ledger: %+v, %v", id, h, err)
		}
		if !h.Bound {
			unbound[id] = true
		}
	}
	if bal.Held != held {
		t.Errorf("Held %d; the ledger's open holds sum to %d", bal.Held, held)
	}
	overdue, err := c.OverdueHolds(ctx, bookNow.Add(time.Hour), 100000)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range overdue {
		if !unbound[h.ID] {
			t.Errorf("OverdueHolds lists %+v, which the ledger has not open and unbound", h)
		}
		delete(unbound, h.ID)
	}
	if len(unbound) != 0 {
		t.Errorf("%d open unbound holds are not listed as overdue", len(unbound))
	}
	if got := budgetSpent(t, c, "k", BudgetDay, bookNow); got != taken {
		t.Errorf("the key's counter = %d; the ledger took %d for it", got, taken)
	}
	t.Logf("%d entries, %d holds left open", len(entries), len(open))
}

// A task's create binding its hold races a release of it (every other hold), then the task's
// settlement comes: every hold ends at most once, the hold's record says what the ledger did (open
// and bound when nothing ended it), no bound hold is listed as overdue, and the ledger sums up.
func TestBadgerBookCreateTaskBindRacesAnEnd(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100000, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		id, task := fmt.Sprint("h", i), fmt.Sprint("task-", i)
		if _, _, err := b.Hold(ctx, Hold{ID: id, NewID: true, Account: "acme", KeyID: "k", Amount: 10,
			Budget: Budget{Limit: 1 << 40, Period: BudgetDay}, Deadline: bookNow}, bookNow); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.CreateTask(ctx, Task{ID: task, Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: bookNow.Unix(), HoldID: id}); err != nil {
				t.Error(err)
			}
		}()
		if i%2 == 1 {
			continue // left to its task
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i%20) * 100 * time.Microsecond) // before, during and after the create
			if _, err := b.Release(ctx, id, "overdue", bookNow); err != nil && !errors.Is(err, ErrHoldEnded) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	overdue, err := b.OverdueHolds(ctx, bookNow.Add(time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(overdue) != 0 {
		t.Errorf("after the releases, %d holds are still listed as overdue: %+v", len(overdue), overdue[0])
	}
	_, entries := sumsUp(t, b, "acme")
	ends := map[string]int{}
	for _, e := range entries {
		if e.Kind == EntrySettle || e.Kind == EntryRelease {
			ends[e.HoldID]++
		}
	}
	released := 0
	defer func() { t.Logf("%d of %d holds released before their task settled them", released, n) }()
	for i := range n {
		id := fmt.Sprint("h", i)
		h, err := b.HoldByID(ctx, id)
		if h.State != HoldOpen {
			released++
		}
		if err != nil {
			t.Fatal(err)
		}
		if (h.State == HoldOpen) != (ends[id] == 0) || ends[id] > 1 {
			t.Fatalf("hold %+v: %d ends in the ledger", h, ends[id])
		}
		if h.State == HoldOpen && (!h.Bound || h.Ref != fmt.Sprint("task-", i)) {
			t.Fatalf("hold %+v is open and not bound to its task", h)
		}
		_, err = b.Settle(ctx, id, 7, bookNow)
		if (err == nil) != (h.State == HoldOpen) || err != nil && !errors.Is(err, ErrHoldEnded) {
			t.Fatalf("settling hold %+v: %v", h, err)
		}
	}
	if bal, _ := sumsUp(t, b, "acme"); bal.Held != 0 {
		t.Errorf("balance %+v: something is still held", bal)
	}
	if got, want := budgetSpent(t, b, "k", BudgetDay, bookNow), -func() (s int64) {
		_, entries := sumsUp(t, b, "acme")
		for _, e := range entries {
			if e.Kind != EntryCredit {
				s += e.Amount
			}
		}
		return s
	}(); got != want {
		t.Errorf("the key's counter = %d; the ledger charged %d", got, want)
	}
}
