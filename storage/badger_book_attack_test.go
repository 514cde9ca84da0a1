package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// An attacker's tests of the book (badger_book*.go): many goroutines on one account and one
// key budget, across a UTC day boundary, with the reconciler and eviction running.

// budgetSpent is the key budget counter Badger has for the period of at.
func budgetSpent(t *testing.T, b *Badger, keyID, period string, at time.Time) int64 {
	t.Helper()
	p, _ := budgetPeriod(period, at)
	var spent int64
	err := b.db.View(func(txn *badger.Txn) (err error) {
		spent, _, err = txnInt64(txn, prefixBudget+keyID+"\x00"+p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return spent
}

// holdsEndedOnce checks that the account's ledger sums to its balance, holds nothing, and has
// each hold it took once and ended once; it returns the entries.
func holdsEndedOnce(t *testing.T, b *Badger, account string) []LedgerEntry {
	t.Helper()
	bal, entries := sumsUp(t, b, account)
	if bal.Held != 0 {
		t.Errorf("balance %+v: something is still held", bal)
	}
	holds, ends := map[string]int{}, map[string]int{}
	for _, e := range entries {
		switch e.Kind {
		case EntryHold:
			holds[e.HoldID]++
		case EntrySettle, EntryRelease:
			ends[e.HoldID]++
		}
	}
	for id, n := range holds {
		if n != 1 || ends[id] != 1 {
			t.Errorf("hold %s: %d hold entries, %d ends; want 1 and 1", id, n, ends[id])
		}
	}
	return entries
}

// dailyBudgetsCharged checks that key k's daily counter of each day of days is what its holds
// charged (charged, by period name).
func dailyBudgetsCharged(t *testing.T, b *Badger, charged map[string]int64, days ...time.Time) {
	t.Helper()
	for _, at := range days {
		p, _ := budgetPeriod(BudgetDay, at)
		if got := budgetSpent(t, b, "k", BudgetDay, at); got != charged[p] {
			t.Errorf("budget of %s = %d; its holds charged %d", p, got, charged[p])
		}
	}
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
			// As handlers/holds does: one now for the list and its releases, so that each
			// release is past its hold's deadline.
			at := after.Add(time.Minute)
			holds, err := b.OverdueHolds(ctx, at, 50)
			if err != nil {
				t.Error(err)
				return
			}
			for _, h := range holds {
				_, err := b.Release(ctx, h.ID, "overdue", at)
				switch {
				case err == nil:
					reconciled.Add(1)
				case errors.Is(err, ErrNotFound) && h.Transient && h.NewID:
					// A request's hold its request ended before its deadline is
					// forgotten (see Hold.NewID): NotFound is its answer.
				case errors.Is(err, ErrNotFound):
					notFound.Store(h.ID, h)
				case !errors.Is(err, ErrHoldEnded):
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
	entries := holdsEndedOnce(t, b, "acme")
	var credited int64
	holds := 0
	for _, e := range entries {
		switch e.Kind {
		case EntryHold:
			holds++
		case EntryCredit:
			credited += e.Amount
		}
	}
	if credited != credit+4*5 {
		t.Errorf("credited %d; want %d (each idempotency key once)", credited, credit+4*5)
	}
	if int64(holds) != taken.Load() {
		t.Errorf("%d holds in the ledger; %d were taken", holds, taken.Load())
	}
	if got := ended.Load() + reconciled.Load(); got != taken.Load() {
		t.Errorf("%d ends answered; %d holds taken", got, taken.Load())
	}
	dailyBudgetsCharged(t, b, charged, before, after)
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
