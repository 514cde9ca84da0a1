package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// budgetSpent is the key budget counter Badger has for the period of at.
func budgetSpent(t *testing.T, b *Badger, keyID, period string, at time.Time) int64 {
	t.Helper()
	p, _ := budgetPeriod(period, at)
	var spent int64
	err := b.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(prefixBudget + keyID + "\x00" + p))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(val []byte) error {
			spent = int64(binary.BigEndian.Uint64(val))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return spent
}

// ledgerSums is sumsUp for a ledger of any length.
func ledgerSums(t *testing.T, b *Badger, account string) (Balance, []LedgerEntry) {
	t.Helper()
	var entries []LedgerEntry
	var sum int64
	for after := ""; ; {
		page, next, err := b.LedgerPage(context.Background(), account, after, MaxLedgerPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			sum += e.Amount
			if e.ID != fmt.Sprint(len(entries)+1) || e.BalanceAfter != sum {
				t.Fatalf("%s's entry %d = %+v; want balance after %d", account, len(entries), e, sum)
			}
			entries = append(entries, e)
		}
		if after = next; next == "" {
			break
		}
	}
	bal, err := b.Balance(context.Background(), account)
	if err != nil || bal.Amount != sum {
		t.Fatalf("%s's balance %+v, %v; its entries sum to %d", account, bal, err, sum)
	}
	return bal, entries
}

// Many goroutines hold, settle and release on one account and one key's daily budget, across a
// UTC day boundary, with transient and recorded holds, bindings, idempotent credits and a
// reconciler releasing overdue holds meanwhile, on a book small enough to evict: every hold ends
// once, the ledger sums to the balance, nothing stays held, no hold is accepted past the balance
// or the budget, and each day's counter is what that day's holds charged.
func TestBadgerBookConcurrentMoneyAcrossADayBoundary(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	b.ledger.maxAccounts = 2
	ctx := context.Background()
	const credit, limit = 3000, 400
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: credit, IdempotencyKey: "c0"}, bookNow); err != nil {
		t.Fatal(err)
	}
	budget := Budget{Limit: limit, Period: BudgetDay}
	before := time.Date(2026, 11, 27, 23, 59, 59, 0, time.UTC)
	after := before.Add(2 * time.Second)
	var (
		mu       sync.Mutex
		charged  = map[string]int64{} // per day: what ended holds charged
		ended    atomic.Int64
		taken    atomic.Int64
		refused  sync.Map // ids of holds refused (402)
		notFound sync.Map // ids the reconciler listed and Release did not find
		wg       sync.WaitGroup
	)
	day := func(at time.Time) string { p, _ := budgetPeriod(BudgetDay, at); return p }
	stop := make(chan struct{})
	// The reconciler: releases what is overdue (deadlines are short), racing the requests.
	var reconciled atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			holds, err := b.OverdueHolds(ctx, after.Add(time.Minute), 50)
			if err != nil {
				t.Error(err)
				return
			}
			for _, h := range holds {
				if _, err := b.Release(ctx, h.ID, "overdue", after); err == nil {
					reconciled.Add(1)
				} else if errors.Is(err, ErrNotFound) {
					notFound.Store(h.ID, h)
				} else if !errors.Is(err, ErrHoldEnded) {
					t.Errorf("reconciler: %+v: %v", h, err)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var workers sync.WaitGroup
	for g := range 16 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 150 {
				now := before
				if i >= 75 {
					now = after
				}
				if i%40 == 0 { // an idempotent credit, the same key from every goroutine
					if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 5, IdempotencyKey: fmt.Sprint("d", i)}, now); err != nil {
						t.Error(err)
						return
					}
				}
				if i%25 == 0 { // another account's traffic, to evict acme now and then
					other := fmt.Sprint("other", g)
					if _, err := b.Credit(ctx, Credit{Account: other, Amount: 1, IdempotencyKey: fmt.Sprint(i)}, now); err != nil {
						t.Error(err)
						return
					}
				}
				id := fmt.Sprintf("h%d-%d", g, i)
				amount := int64(1 + r.IntN(9))
				h := Hold{ID: id, NewID: r.IntN(2) == 0, Account: "acme", KeyID: "k", Amount: amount, Budget: budget,
					Deadline: now.Add(time.Duration(r.IntN(3)) * time.Second), Transient: r.IntN(2) == 0}
				if _, _, err := b.Hold(ctx, h, now); errors.Is(err, ErrBudgetExceeded) || errors.Is(err, ErrInsufficient) {
					refused.Store(id, true)
					continue
				} else if err != nil {
					t.Error(err)
					return
				}
				taken.Add(1)
				if r.IntN(4) == 0 {
					if err := b.BindHold(ctx, id, "task-"+id); err != nil && !errors.Is(err, ErrHoldEnded) {
						t.Error("bind:", err)
						return
					}
				}
				var err error
				c := int64(0)
				if r.IntN(3) == 0 {
					_, err = b.Release(ctx, id, "", now)
				} else {
					c = int64(r.IntN(int(amount) + 1))
					_, err = b.Settle(ctx, id, c, now)
				}
				switch {
				case err == nil:
					ended.Add(1)
					mu.Lock()
					charged[day(now)] += c
					mu.Unlock()
				case errors.Is(err, ErrHoldEnded):
				default:
					t.Error("end:", err)
					return
				}
			}
		}()
	}
	workers.Wait()
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	notFound.Range(func(id, h any) bool {
		_, wasRefused := refused.Load(id)
		t.Errorf("the reconciler listed %+v as overdue (refused: %v); its Release found no such hold", h, wasRefused)
		return true
	})
	bal, entries := ledgerSums(t, b, "acme")
	if bal.Held != 0 {
		t.Errorf("balance %+v: something is still held", bal)
	}
	holdsSeen, ends := map[string]int{}, map[string]int{}
	var credited int64
	for _, e := range entries {
		switch e.Kind {
		case EntryHold:
			holdsSeen[e.HoldID]++
		case EntrySettle, EntryRelease:
			ends[e.HoldID]++
		case EntryCredit:
			credited += e.Amount
		}
	}
	if credited != credit+4*5 {
		t.Errorf("credited %d; want %d (each idempotency key once)", credited, credit+4*5)
	}
	if int64(len(holdsSeen)) != taken.Load() {
		t.Errorf("%d holds in the ledger; %d were taken", len(holdsSeen), taken.Load())
	}
	for id, n := range holdsSeen {
		if n != 1 || ends[id] != 1 {
			t.Errorf("hold %s: %d hold entries, %d ends; want 1 and 1", id, n, ends[id])
		}
	}
	if got := ended.Load() + reconciled.Load(); got != taken.Load() {
		t.Errorf("%d ends answered; %d holds taken", got, taken.Load())
	}
	for _, at := range []time.Time{before, after} {
		if got, want := budgetSpent(t, b, "k", BudgetDay, at), charged[day(at)]; got != want {
			t.Errorf("budget of %s = %d; its holds charged %d", day(at), got, want)
		}
	}
}

// A key budget counter that only transient holds have used is in memory only; a failed batch
// (another account's) makes the book read it again, and the end of such a hold must still
// charge the budget, on disk and for the holds after it.
func TestBadgerBookTransientBudgetOutlivesAFailedBatch(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	for _, account := range []string{"acme", "other"} {
		if _, err := b.Credit(ctx, Credit{Account: account, Amount: 100, IdempotencyKey: "c"}, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	budget := Budget{Limit: 50, Period: BudgetDay}
	hold := func(id string, amount int64, transient bool) error {
		_, _, err := b.Hold(ctx, Hold{ID: id, Account: "acme", KeyID: "k", Amount: amount, Budget: budget,
			Deadline: bookNow.Add(time.Hour), Transient: transient}, bookNow)
		return err
	}
	if err := hold("t", 40, true); err != nil {
		t.Fatal(err)
	}
	b.ledger.queue.failCommit = func() error { return errors.New("disk full") }
	if _, err := b.Credit(ctx, Credit{Account: "other", Amount: 1, IdempotencyKey: "lost"}, bookNow); err == nil {
		t.Fatal("a credit whose batch failed succeeded")
	}
	b.ledger.queue.failCommit = nil
	if _, err := b.Settle(ctx, "t", 40, bookNow); err != nil {
		t.Fatal(err)
	}
	if got := budgetSpent(t, b, "k", BudgetDay, bookNow); got != 40 {
		t.Errorf("the key's counter on disk = %d; want the 40 charged", got)
	}
	if err := hold("over", 20, false); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("a hold of 20 past the 40 charged of a budget of 50 = %v; want ErrBudgetExceeded", err)
	}
}

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
	bal, entries := ledgerSums(t, c, "acme")
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

// Holds of 1 from many goroutines, transient and recorded, on one account and one key's daily
// budget, on both sides of a UTC day boundary: each day accepts exactly what fits, the budget of
// the day or what is left of the balance, neither more nor a 402 too early.
func TestBadgerBookHoldsExactlyFitAcrossADayBoundary(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	b.ledger.maxAccounts = 2
	ctx := context.Background()
	const balance, limit = 150, 100
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: balance, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	budget := Budget{Limit: limit, Period: BudgetDay}
	for day, now := range []time.Time{time.Date(2026, 11, 27, 23, 59, 59, 0, time.UTC), time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)} {
		var accepted atomic.Int64
		var wg sync.WaitGroup
		for g := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					h := Hold{ID: fmt.Sprintf("d%d-%d-%d", day, g, i), NewID: i%2 == 0, Account: "acme", KeyID: "k", Amount: 1,
						Budget: budget, Deadline: now.Add(time.Hour), Transient: (g+i)%2 == 0}
					_, _, err := b.Hold(ctx, h, now)
					switch {
					case err == nil:
						accepted.Add(1)
					case !errors.Is(err, ErrInsufficient):
						t.Error(err)
						return
					}
					if i%7 == 0 { // another account, to evict acme's neighbours
						if _, err := b.Credit(ctx, Credit{Account: fmt.Sprint("o", g), Amount: 1, IdempotencyKey: h.ID}, now); err != nil {
							t.Error(err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		if want := min(limit, balance-day*limit); accepted.Load() != int64(want) {
			t.Errorf("day %d: %d holds of 1 accepted; want %d", day, accepted.Load(), want)
		}
	}
}

// As TestBadgerBookConcurrentMoneyAcrossADayBoundary, with every fifth batch failing to commit:
// a failed end is retried as the accountant does (a transient hold whose end failed is gone, as
// released); the ledger sums to the balance, every hold it has taken is ended once, nothing
// stays held, and each day's counter is what the successful ends charged.
func TestBadgerBookConcurrentMoneyWithFailingBatches(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	b.ledger.maxAccounts = 2
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 3000, IdempotencyKey: "c0"}, bookNow); err != nil {
		t.Fatal(err)
	}
	var commits atomic.Int64
	b.ledger.queue.failCommit = func() error {
		if commits.Add(1)%5 == 0 {
			return errors.New("every fifth commit fails")
		}
		return nil
	}
	budget := Budget{Limit: 400, Period: BudgetDay}
	before := time.Date(2026, 11, 27, 23, 59, 59, 0, time.UTC)
	after := before.Add(2 * time.Second)
	day := func(at time.Time) string { p, _ := budgetPeriod(BudgetDay, at); return p }
	var (
		mu      sync.Mutex
		charged = map[string]int64{}
		wg      sync.WaitGroup
	)
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 13))
			for i := range 120 {
				now := before
				if i >= 60 {
					now = after
				}
				if i%30 == 0 {
					if _, err := b.Credit(ctx, Credit{Account: fmt.Sprint("o", g), Amount: 1, IdempotencyKey: fmt.Sprint(i)}, now); err != nil && !errors.Is(err, errBatchFailed) {
						t.Error(err)
						return
					}
				}
				id := fmt.Sprintf("h%d-%d", g, i)
				amount := int64(1 + r.IntN(9))
				h := Hold{ID: id, NewID: r.IntN(2) == 0, Account: "acme", KeyID: "k", Amount: amount, Budget: budget,
					Deadline: now.Add(time.Hour), Transient: r.IntN(2) == 0}
				if _, _, err := b.Hold(ctx, h, now); err != nil {
					if !errors.Is(err, ErrInsufficient) && !errors.Is(err, errBatchFailed) {
						t.Error(err)
						return
					}
					continue
				}
				if r.IntN(4) == 0 {
					if err := b.BindHold(ctx, id, "task-"+id); err != nil && !errors.Is(err, errBatchFailed) {
						t.Error("bind:", err)
						return
					}
				}
				c := int64(-1)
				if r.IntN(3) != 0 {
					c = int64(r.IntN(int(amount) + 1))
				}
				for attempt := 0; ; attempt++ {
					var err error
					if c < 0 {
						_, err = b.Release(ctx, id, "", now)
					} else {
						_, err = b.Settle(ctx, id, c, now)
					}
					if err == nil {
						mu.Lock()
						charged[day(now)] += max(c, 0)
						mu.Unlock()
						break
					}
					if errors.Is(err, ErrNotFound) || errors.Is(err, ErrHoldEnded) && attempt > 0 {
						break // a transient hold whose end failed: gone, as released
					}
					if !errors.Is(err, errBatchFailed) || attempt > 20 {
						t.Error("end:", id, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	b.ledger.queue.failCommit = nil
	if t.Failed() {
		return
	}
	if commits.Load() < 10 {
		t.Fatalf("%d commits: too few failed", commits.Load())
	}
	bal, entries := ledgerSums(t, b, "acme")
	if bal.Held != 0 {
		t.Errorf("balance %+v: something is still held", bal)
	}
	holdsSeen, ends := map[string]int{}, map[string]int{}
	for _, e := range entries {
		switch e.Kind {
		case EntryHold:
			holdsSeen[e.HoldID]++
		case EntrySettle, EntryRelease:
			ends[e.HoldID]++
		}
	}
	for id, n := range holdsSeen {
		if n != 1 || ends[id] != 1 {
			t.Errorf("hold %s: %d hold entries, %d ends; want 1 and 1", id, n, ends[id])
		}
	}
	for _, at := range []time.Time{before, after} {
		if got, want := budgetSpent(t, b, "k", BudgetDay, at), charged[day(at)]; got != want {
			t.Errorf("budget of %s = %d; the ends that succeeded charged %d", day(at), got, want)
		}
	}
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
	_, entries := ledgerSums(t, b, "acme")
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
	if bal, _ := ledgerSums(t, b, "acme"); bal.Held != 0 {
		t.Errorf("balance %+v: something is still held", bal)
	}
	if got, want := budgetSpent(t, b, "k", BudgetDay, bookNow), -func() (s int64) {
		_, entries := ledgerSums(t, b, "acme")
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

// A credit never takes the balance past MaxAmount, an open transient hold notwithstanding: the
// balance it is checked against is the one Badger records and Balance answers, which the hold
// is not in.
func TestBadgerCreditBoundCountsTheRecordedBalance(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: MaxAmount - 10, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Hold(ctx, Hold{ID: "t", Account: "acme", Amount: 100, Deadline: bookNow.Add(time.Hour), Transient: true}, bookNow); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 50, IdempotencyKey: "past"}, bookNow); !errors.Is(err, ErrBalanceBound) {
		t.Errorf("a credit taking the balance to MaxAmount+40 = %v; want ErrBalanceBound", err)
	}
	if bal, _ := sumsUp(t, b, "acme"); bal.Amount > MaxAmount {
		t.Errorf("balance %d is past MaxAmount", bal.Amount)
	}
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 10, IdempotencyKey: "fits"}, bookNow); err != nil {
		t.Errorf("a credit taking the balance to MaxAmount: %v", err)
	}
}

// A transient hold that fits only in money (or key budget) that an end not yet committed gives
// back is not accepted on it alone: when that end's batch fails, the account and the counter
// are read again and must not hold more than the balance, nor the key more than its budget.
func TestBadgerTransientHoldOnMoneyAFailedEndFreed(t *testing.T) {
	for _, c := range []struct {
		name           string
		balance, limit int64
	}{{"balance", 100, 1000}, {"budget", 1000, 100}} {
		t.Run(c.name, func(t *testing.T) { transientHoldOnFailedFree(t, c.balance, c.limit) })
	}
}

func transientHoldOnFailedFree(t *testing.T, balance, limit int64) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: balance, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	budget := Budget{Limit: limit, Period: BudgetDay}
	if _, _, err := b.Hold(ctx, Hold{ID: "r", Account: "acme", KeyID: "k", Amount: 100, Budget: budget, Deadline: bookNow.Add(time.Hour)}, bookNow); err != nil {
		t.Fatal(err)
	}
	entered, fail := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.ledger.queue.failCommit = func() error {
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil
		}
		close(entered)
		<-fail
		return errors.New("disk full")
	}
	released := make(chan error, 1)
	go func() {
		_, err := b.Release(ctx, "r", "", bookNow)
		released <- err
	}()
	<-entered // the release is decided, and its batch is being written
	took := make(chan error, 1)
	go func() {
		_, _, err := b.Hold(ctx, Hold{ID: "t", Account: "acme", KeyID: "k", Amount: 100, Budget: budget,
			Deadline: bookNow.Add(time.Hour), Transient: true}, bookNow)
		took <- err
	}()
	select {
	case err := <-took:
		if err == nil {
			t.Log("the transient hold was accepted before the release was committed")
		}
		close(fail)
	case <-time.After(200 * time.Millisecond): // it waits for the release's batch
		close(fail)
		<-took
	}
	if err := <-released; err == nil {
		t.Fatal("the release whose batch failed succeeded")
	}
	b.ledger.queue.failCommit = nil
	// Read again: r is open (100 held); whatever t became, neither may hold more.
	a, err := b.ledger.lockAccount(b.db, "acme")
	if err != nil {
		t.Fatal(err)
	}
	available := a.bal.Amount
	p, _ := budgetPeriod(BudgetDay, bookNow)
	counter, err := b.ledger.budgets.lock(b.db, prefixBudget+"k\x00"+p, a.epoch.Load())
	if err != nil {
		a.mu.Unlock()
		t.Fatal(err)
	}
	spent := counter.spent
	b.ledger.budgets.mu.Unlock()
	a.mu.Unlock()
	if available < 0 {
		t.Errorf("after the failed release, %d of the balance is available: holds past the balance were accepted", available)
	}
	if spent > limit {
		t.Errorf("after the failed release, the key has %d of its budget of %d taken", spent, limit)
	}
	if _, _, err := b.Hold(ctx, Hold{ID: "more", Account: "acme", KeyID: "k", Amount: 1, Budget: budget, Deadline: bookNow.Add(time.Hour), Transient: true}, bookNow); err == nil && balance <= limit {
		t.Error("a hold of 1 on a balance fully held was accepted")
	}
}
