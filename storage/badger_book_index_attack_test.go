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

// The sharded hold index (holdIndex) under the accountant's own use: many accounts, more than
// the book keeps, request holds with new IDs (NewID, transient, as handlers/accounting takes
// them) beside recorded and bound ones, ended by their requests, by the reconciler past their
// deadlines, and by batches that fail now and then. Every hold the ledger took ends once, every
// account's ledger sums to its balance and holds nothing, no end is answered twice, and once
// every hold ended the index keeps none (a hold left in it is memory that never comes back).
func TestBadgerHoldIndexUnderManyAccounts(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	b.ledger.maxAccounts = 3
	ctx := context.Background()
	const accounts, workers, rounds = 12, 16, 200
	for i := range accounts {
		if _, err := b.Credit(ctx, Credit{Account: fmt.Sprint("acct", i), Amount: 100000, IdempotencyKey: "c"}, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	var commits atomic.Int64
	b.ledger.queue.mu.Lock()
	b.ledger.queue.failCommit = func() error {
		if commits.Add(1)%3 == 0 {
			return errors.New("every third commit fails")
		}
		return nil
	}
	b.ledger.queue.mu.Unlock()
	late := bookNow.Add(time.Hour) // the reconciler's now: past the short deadlines
	var (
		endsAnswered sync.Map // hold id -> who ended it
		twice        atomic.Int64
		wg           sync.WaitGroup
	)
	answered := func(id, by string) {
		if prev, loaded := endsAnswered.LoadOrStore(id, by); loaded {
			twice.Add(1)
			t.Errorf("hold %s ended by %s and again by %s", id, prev, by)
		}
	}
	stop := make(chan struct{})
	wg.Go(func() { // the reconciler
		for {
			select {
			case <-stop:
				return
			default:
			}
			holds, err := b.OverdueHolds(ctx, late, 64)
			if err != nil {
				t.Error(err)
				return
			}
			for _, h := range holds {
				if _, err := b.ReleaseOverdue(ctx, h.ID, "overdue", late); err == nil {
					answered(h.ID, "the reconciler")
				} else if !errors.Is(err, ErrHoldEnded) && !errors.Is(err, ErrHoldBound) && !errors.Is(err, ErrNotFound) && !errors.Is(err, errBatchFailed) {
					t.Errorf("reconciler: %+v: %v", h, err)
				}
			}
			time.Sleep(time.Millisecond)
		}
	})
	var work sync.WaitGroup
	for w := range workers {
		work.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 24))
			for i := range rounds {
				account := fmt.Sprint("acct", r.IntN(accounts))
				id := fmt.Sprintf("hold_%02d%04d", w, i)
				deadline := bookNow.Add(time.Duration(1+r.IntN(3)) * time.Minute) // before late
				h := Hold{ID: id, NewID: r.IntN(4) != 0, Account: account, KeyID: "key-" + account, Amount: int64(1 + r.IntN(20)),
					Budget: Budget{Limit: 1 << 40, Period: BudgetMonth}, Deadline: deadline, Transient: r.IntN(3) != 0}
				if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
					if !errors.Is(err, errBatchFailed) {
						t.Errorf("hold %s: %v", id, err)
						return
					}
					continue
				}
				bound := false
				if r.IntN(6) == 0 {
					err := b.BindHold(ctx, id, "task-"+id)
					// ErrNotFound: the reconciler released it (its deadline is past by the
					// reconciler's clock) in a batch that failed, which leaves a transient
					// hold as released, unwritten.
					if err != nil && !errors.Is(err, errBatchFailed) && !errors.Is(err, ErrHoldEnded) && !errors.Is(err, ErrNotFound) {
						t.Errorf("bind %s: %v", id, err)
						return
					}
					bound = err == nil
				}
				if !bound && r.IntN(5) == 0 {
					continue // left to the reconciler (a bound one is its task's to end)
				}
				for attempt := 0; ; attempt++ {
					var err error
					if r.IntN(2) == 0 {
						_, err = b.Release(ctx, id, "", bookNow)
					} else {
						_, err = b.Settle(ctx, id, int64(r.IntN(int(h.Amount)+1)), bookNow)
					}
					if err == nil {
						answered(id, "its request")
						break
					}
					if errors.Is(err, ErrNotFound) || errors.Is(err, ErrHoldEnded) {
						break // ended by the reconciler, or a transient whose end failed (as released)
					}
					if !errors.Is(err, errBatchFailed) || attempt > 20 {
						t.Errorf("end %s: %v", id, err)
						return
					}
				}
			}
		})
	}
	work.Wait()
	close(stop)
	wg.Wait()
	b.ledger.queue.mu.Lock()
	b.ledger.queue.failCommit = nil
	b.ledger.queue.mu.Unlock()
	if t.Failed() {
		return
	}
	// What is left open is overdue: the reconciler's last round ends it.
	for {
		holds, err := b.OverdueHolds(ctx, late, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(holds) == 0 {
			break
		}
		for _, h := range holds {
			if _, err := b.ReleaseOverdue(ctx, h.ID, "overdue", late); err == nil {
				answered(h.ID, "the last round")
			} else if !errors.Is(err, ErrHoldEnded) && !errors.Is(err, ErrHoldBound) && !errors.Is(err, ErrNotFound) {
				t.Fatalf("last round: %+v: %v", h, err)
			}
		}
	}
	if commits.Load() < 14 {
		t.Fatalf("%d commits: too few failed", commits.Load())
	}
	recorded := 0
	for i := range accounts {
		entries := holdsEndedOnce(t, b, fmt.Sprint("acct", i))
		holds := map[string]bool{}
		for _, e := range entries {
			if e.Kind == EntryHold {
				holds[e.HoldID] = true
				recorded++
			}
		}
		for _, e := range entries {
			if (e.Kind == EntrySettle || e.Kind == EntryRelease) && !holds[e.HoldID] {
				t.Errorf("acct%d: an end of %s, which has no hold entry", i, e.HoldID)
			}
			if e.Kind == EntrySettle || e.Kind == EntryRelease {
				if _, ok := endsAnswered.Load(e.HoldID); !ok {
					t.Errorf("acct%d: the end of %s is in the ledger, and no caller was told it succeeded", i, e.HoldID)
				}
			}
		}
	}
	if recorded < workers*rounds/2 {
		t.Fatalf("only %d holds recorded of %d taken", recorded, workers*rounds)
	}
	// An entry of the index that no account in the book has among its holds is one nothing
	// will ever take out (read and evict go through the account's holds, a batch through the
	// holds it ends): memory lost for good.
	left := 0
	b.ledger.holds.Range(func(h *bookHold) bool {
		if b.ledger.accounts[h.acct.name] == h.acct && h.acct.holds[h.rec.Hold.ID] == h {
			return true // its account's, dropped with it or when it is read again
		}
		left++
		t.Errorf("the index keeps %+v of %s, which no account has, after every hold ended", h.rec.Hold, h.acct.name)
		return left < 5
	})
}
