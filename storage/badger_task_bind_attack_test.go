package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Task creates carrying transient holds, as the video handler makes them, from many goroutines
// on a book small enough to evict, with every sixth batch failing, some records too large for
// the batch and pairs of creates of one task id: each hold is ended by its task (the create
// succeeded; settled or released as a finish does) or by its request (the create failed; the
// handler releases or settles it), retried as the accountant retries. Then every task record
// carries a hold bound to it, every bound hold has its task, every hold the ledger has is ended
// once, and the ledger sums to the balance with nothing held.
func TestBadgerCreatesWithFailingBatches(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	b.ledger.maxAccounts = 2
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 1_000_000, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	var commits atomic.Int64
	b.ledger.queue.failCommit = func() error {
		if commits.Add(1)%6 == 0 {
			return errors.New("every sixth commit fails")
		}
		return nil
	}
	var (
		mu      sync.Mutex
		created = map[string]string{} // task id -> the hold of the create that made it
		lost    = map[string]bool{}   // transient holds whose end failed: gone, as released
	)
	// end ends a hold as the accountant does: retried while its batch fails. Only a transient
	// hold whose end failed is unknown after (gone, as released): the hold of a create whose
	// batch failed was taken again (holdAgain), the balance and budget being ample.
	end := func(id string, settle bool) {
		for attempt := range 20 {
			var err error
			if settle {
				_, err = b.Settle(ctx, id, 1, bookNow)
			} else {
				_, err = b.Release(ctx, id, "task failed", bookNow)
			}
			switch {
			case err == nil, errors.Is(err, ErrHoldEnded):
				return
			case errors.Is(err, ErrNotFound) && attempt == 0:
				t.Errorf("ending %s: %v; no end of it had failed", id, err)
				return
			case errors.Is(err, ErrNotFound):
				mu.Lock()
				lost[id] = true // a transient hold whose end's batch failed
				mu.Unlock()
				return
			case !errors.Is(err, errBatchFailed):
				t.Errorf("ending %s: %v", id, err)
				return
			}
		}
		t.Errorf("ending %s failed 20 times", id)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 11))
			for i := range 40 {
				holdID := fmt.Sprintf("h%d-%d", g, i)
				h := Hold{ID: holdID, NewID: true, Transient: true, Account: "acme", KeyID: "k", Amount: 10,
					Budget: Budget{Limit: 1_000_000, Period: BudgetDay}, Deadline: bookNow.Add(time.Hour)}
				if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
					t.Error(err)
					return
				}
				taskID := fmt.Sprintf("task-%d-%d", g, i)
				if i%5 == 0 {
					taskID = fmt.Sprintf("task-shared-%d-%d", g/2, i) // two goroutines, one id
				}
				task := boundTask(taskID, holdID)
				if i%7 == 0 {
					task.Request = []byte(`{"prompt":"` + strings.Repeat("a", maxBatchedTaskRecord) + `"}`)
				}
				if i%9 == 0 {
					_, _ = b.Credit(ctx, Credit{Account: fmt.Sprint("other", g), Amount: 1, IdempotencyKey: holdID}, bookNow) // evicts acme; may fail with its batch
				}
				_, err := b.CreateTask(ctx, task)
				if err != nil {
					// The handler: released once the upstream confirms the cancel, else charged.
					end(holdID, r.IntN(2) == 0)
					continue
				}
				mu.Lock()
				created[taskID] = holdID
				mu.Unlock()
				if err := b.BindHold(ctx, holdID, taskID); err != nil && !errors.Is(err, errBatchFailed) {
					t.Errorf("BindHold(%s, %s) after its create: %v", holdID, taskID, err)
				}
				end(holdID, r.IntN(2) == 0) // the task's finish
			}
		})
	}
	wg.Wait()
	b.ledger.queue.failCommit = nil
	if t.Failed() {
		return
	}
	for taskID, holdID := range created {
		task, err := b.Task(ctx, taskID)
		if err != nil || task.HoldID != holdID {
			t.Errorf("task %s = %+v, %v; want it, carrying %s", taskID, task, err, holdID)
			continue
		}
		h, err := b.HoldByID(ctx, holdID)
		if err != nil || !h.Bound || h.Ref != taskID || h.State == HoldOpen {
			t.Errorf("the hold %s of task %s = %+v, %v; want it bound to the task and ended", holdID, taskID, h, err)
		}
	}
	for _, e := range holdsEndedOnce(t, b, "acme") {
		if e.Kind != EntryHold {
			continue
		}
		h, err := b.HoldByID(ctx, e.HoldID)
		if err == nil && h.Bound {
			if _, ok := created[h.Ref]; !ok {
				t.Errorf("the hold %s is bound to %s, which no create made", h.ID, h.Ref)
			}
		}
	}
	t.Logf("%d tasks made; %d transient holds lost with a failed end", len(created), len(lost))
}

// A transient hold whose recording fails with its batch is taken again in memory: the create of
// a record too large for the batch (which records the hold first, unbound, for createInTxn to
// bind) and a BindHold change nothing a later read sees. The hold is still open, transient and
// unbound, counts against the balance and the budget, and its request ends it once.
func TestBadgerFailedRecordingOfATransientHoldKeepsIt(t *testing.T) {
	large := boundTask("task-1", "h1")
	large.Request = []byte(`{"prompt":"` + strings.Repeat("a", maxBatchedTaskRecord) + `"}`)
	for name, record := range map[string]func(*Badger) error{
		"large create": func(b *Badger) error { _, err := b.CreateTask(context.Background(), large); return err },
		"BindHold":     func(b *Badger) error { return b.BindHold(context.Background(), "h1", "task-1") },
	} {
		t.Run(name, func(t *testing.T) { failedRecordingKeepsTheHold(t, record) })
	}
}

func failedRecordingKeepsTheHold(t *testing.T, record func(*Badger) error) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 10, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	budget := Budget{Limit: 8, Period: BudgetDay}
	h := Hold{ID: "h1", NewID: true, Transient: true, Account: "acme", KeyID: "k", Amount: 6, Budget: budget, Deadline: bookNow.Add(time.Minute)}
	if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
		t.Fatal(err)
	}
	diskFull := errors.New("disk full")
	b.ledger.queue.failCommit = func() error { return diskFull }
	err := record(b)
	b.ledger.queue.failCommit = nil
	if !errors.Is(err, diskFull) {
		t.Fatalf("recording the hold in a batch that failed = %v; want the commit's error", err)
	}
	if got, err := b.HoldByID(ctx, "h1"); err != nil || got.State != HoldOpen || got.Bound || !got.Transient {
		t.Fatalf("the hold = %+v, %v; want it open, transient and unbound", got, err)
	}
	for amount, want := range map[int64]error{5: ErrInsufficient, 3: ErrBudgetExceeded} {
		h2 := Hold{ID: fmt.Sprint("h2-", amount), NewID: true, Account: "acme", KeyID: "k", Amount: amount, Budget: budget, Deadline: bookNow.Add(time.Minute)}
		if _, _, err := b.Hold(ctx, h2, bookNow); !errors.Is(err, want) {
			t.Fatalf("a hold of %d past what h1 leaves = %v; want %v", amount, err, want)
		}
	}
	if _, err := b.Settle(ctx, "h1", 6, bookNow); err != nil {
		t.Fatalf("the request's end of its hold: %v", err)
	}
	if bal, entries := sumsUp(t, b, "acme"); bal.Amount != 4 || bal.Held != 0 || len(entries) != 3 {
		t.Fatalf("balance %+v, %d entries; want 4, nothing held, the credit and h1's two", bal, len(entries))
	}
	if got := budgetSpent(t, b, "k", BudgetDay, bookNow); got != 6 {
		t.Fatalf("the key's counter = %d; want the 6 charged", got)
	}
}

// The hold of a create whose batch fails is taken again once the book has read the account
// again. A request that locks the account in between (as the failure is handled) is given what
// the hold held; the hold is taken again all the same, past the balance and the key's budget,
// for its request to end: released (the upstream cancel confirmed), it charges nothing.
func TestBadgerCreateWhoseBatchFailsKeepsItsHoldFromARequestInBetween(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 10, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	hold := func(id string) Hold {
		return Hold{ID: id, NewID: true, Transient: true, Account: "acme", KeyID: "k", Amount: 6,
			Budget: Budget{Limit: 8, Period: BudgetDay}, Deadline: bookNow.Add(time.Minute)}
	}
	if _, _, err := b.Hold(ctx, hold("h1"), bookNow); err != nil {
		t.Fatal(err)
	}
	entered, proceed := make(chan struct{}), make(chan struct{})
	b.ledger.queue.failCommit = func() error {
		close(entered)
		<-proceed
		return errors.New("disk full")
	}
	created := make(chan error, 1)
	go func() {
		_, err := b.CreateTask(ctx, boundTask("task-1", "h1"))
		created <- err
	}()
	<-entered
	// The request: Hold's steps (lockAccount, decideHold), with the account locked from before
	// the failure to after the book's epoch moved on, so that it comes first.
	a, err := b.ledger.lockAccount(b.db, "acme")
	if err != nil {
		t.Fatal(err)
	}
	epoch := b.ledger.epoch.Load()
	close(proceed)
	for b.ledger.epoch.Load() == epoch {
		time.Sleep(time.Millisecond)
	}
	b.ledger.queue.failCommit = nil
	err = b.ledger.read(b.db, a, b.ledger.epoch.Load()+1)
	if err == nil {
		_, _, _, _, err = b.decideHold(a, hold("h2"), bookNow, false)
	}
	a.mu.Unlock()
	if err != nil {
		t.Fatalf("the request's hold, with the failed create's not taken again yet: %v", err)
	}
	if err := <-created; err == nil {
		t.Fatal("the create whose batch failed succeeded")
	}
	if h, err := b.HoldByID(ctx, "h1"); err != nil || h.State != HoldOpen || !h.Transient || h.Bound {
		t.Fatalf("the hold of the failed create = %+v, %v; want it open and transient, for its request to end", h, err)
	}
	if _, _, err := b.Hold(ctx, Hold{ID: "h3", NewID: true, Account: "acme", Amount: 1, Deadline: bookNow.Add(time.Minute)}, bookNow); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("a hold with 12 of 10 held = %v; want ErrInsufficient", err)
	}
	if _, err := b.Release(ctx, "h1", "cancelled: its record could not be written", bookNow); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Settle(ctx, "h2", 6, bookNow); err != nil {
		t.Fatal(err)
	}
	if bal, entries := sumsUp(t, b, "acme"); bal.Amount != 4 || bal.Held != 0 || len(entries) != 5 {
		t.Fatalf("balance %+v, %d entries; want 4, nothing held, a credit and two holds ended", bal, len(entries))
	}
	if got := budgetSpent(t, b, "k", BudgetDay, bookNow); got != 6 {
		t.Fatalf("the key's counter = %d; want the 6 charged", got)
	}
}
