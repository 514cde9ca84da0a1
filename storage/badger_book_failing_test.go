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
)

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
	holdsEndedOnce(t, b, "acme")
	dailyBudgetsCharged(t, b, charged, before, after)
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
