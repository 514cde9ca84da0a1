package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// boundTask is a queued video task of acme carrying the hold holdID.
func boundTask(id, holdID string) Task {
	return Task{ID: id, Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: bookNow.Unix(), HoldID: holdID}
}

// checkBoundTo fails unless the hold is open and bound to task, off the reconciler's list.
func checkBoundTo(t *testing.T, b *Badger, holdID, task string) Hold {
	t.Helper()
	ctx := context.Background()
	h, err := b.HoldByID(ctx, holdID)
	if err != nil || h.State != HoldOpen || !h.Bound || h.Ref != task || h.Transient {
		t.Fatalf("hold %s = %+v, %v; want open, recorded and bound to %s", holdID, h, err, task)
	}
	overdue, err := b.OverdueHolds(ctx, bookNow.Add(24*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range overdue {
		if o.ID == holdID {
			t.Fatalf("the bound hold %s is on the reconciler's list", holdID)
		}
	}
	return h
}

// A transient hold (one a request took in memory only) named by a task's create is recorded and
// bound by that create, in the same commit as the task: after a restart both are there, the
// ledger has the hold's entry, the balance holds it, and the key's counter in Badger counts it.
func TestBadgerCreateRecordsAndBindsATransientHold(t *testing.T) {
	dir := t.TempDir()
	b := openBook(t, dir)
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 1000, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	h := Hold{ID: "h1", NewID: true, Account: "acme", KeyID: "k", Amount: 300, Transient: true,
		Budget: Budget{Limit: 500, Period: BudgetDay}, Deadline: bookNow.Add(time.Minute)}
	if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
		t.Fatal(err)
	}
	if got := budgetSpent(t, b, "k", BudgetDay, bookNow); got != 0 {
		t.Fatalf("the counter in Badger has %d of a transient hold; want 0 before its create", got)
	}
	if _, err := b.CreateTask(ctx, boundTask("task-1", "h1")); err != nil {
		t.Fatal(err)
	}
	checkBoundTo(t, b, "h1", "task-1")
	if err := b.BindHold(ctx, "h1", "task-1"); err != nil {
		t.Fatalf("BindHold after the create that bound it = %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openBook(t, dir)
	defer b.Close()
	checkBoundTo(t, b, "h1", "task-1")
	if _, err := b.Task(ctx, "task-1"); err != nil {
		t.Fatalf("the task after a restart: %v", err)
	}
	bal, entries := sumsUp(t, b, "acme")
	if bal.Amount != 700 || bal.Held != 300 || len(entries) != 2 || entries[1].Kind != EntryHold || entries[1].HoldID != "h1" {
		t.Fatalf("balance %+v, entries %+v; want the credit and h1's hold entry", bal, entries)
	}
	if got := budgetSpent(t, b, "k", BudgetDay, bookNow); got != 300 {
		t.Fatalf("the key's counter = %d after the create recorded the hold; want 300", got)
	}
	if _, err := b.Settle(ctx, "h1", 250, bookNow); err != nil {
		t.Fatal(err)
	}
	if bal, _ := sumsUp(t, b, "acme"); bal.Amount != 750 || bal.Held != 0 {
		t.Fatalf("balance after the settle = %+v; want 750, nothing held", bal)
	}
}

// A create whose ledger batch fails to commit writes nothing: no task, and the hold stays as it
// was: a recorded one open, unbound and on the reconciler's list; a transient one (in memory
// only) taken again, still counting against the balance and the key's budget. The create made
// again then binds it.
func TestBadgerCreateWhoseBatchFailsLeavesTheHold(t *testing.T) {
	for _, transient := range []bool{false, true} {
		t.Run(fmt.Sprint("transient=", transient), func(t *testing.T) { createWhoseBatchFails(t, transient) })
	}
}

func createWhoseBatchFails(t *testing.T, transient bool) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 10, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	deadline := bookNow.Add(time.Minute)
	budget := Budget{Limit: 8, Period: BudgetDay}
	if _, _, err := b.Hold(ctx, Hold{ID: "h1", NewID: true, Account: "acme", KeyID: "k", Amount: 6, Budget: budget, Deadline: deadline, Transient: transient}, bookNow); err != nil {
		t.Fatal(err)
	}
	diskFull := errors.New("disk full")
	b.ledger.queue.failCommit = func() error { return diskFull }
	_, err := b.CreateTask(ctx, boundTask("task-1", "h1"))
	b.ledger.queue.failCommit = nil
	if !errors.Is(err, diskFull) {
		t.Fatalf("a create whose batch failed = %v; want the commit's error", err)
	}
	if _, err := b.Task(ctx, "task-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the task of a failed create: %v; want ErrNotFound", err)
	}
	h, err := b.HoldByID(ctx, "h1")
	if err != nil || h.State != HoldOpen || h.Bound || h.Transient != transient || h.Amount != 6 {
		t.Fatalf("the hold of a failed create = %+v, %v; want it open and unbound as it was", h, err)
	}
	overdue, err := b.OverdueHolds(ctx, deadline.Add(time.Second), 10)
	if err != nil || len(overdue) != 1 || overdue[0].ID != "h1" || overdue[0].Bound {
		t.Fatalf("overdue holds = %+v, %v; want h1, unbound", overdue, err)
	}
	// Still counted: a second hold of 6 fits neither the balance (4 left) nor the budget (2).
	if _, _, err := b.Hold(ctx, Hold{ID: "h2", NewID: true, Account: "acme", KeyID: "k", Amount: 3, Budget: budget, Deadline: deadline}, bookNow); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("a hold past what h1 left = %v; want ErrInsufficient", err)
	}
	if _, err := b.CreateTask(ctx, boundTask("task-1", "h1")); err != nil {
		t.Fatal(err)
	}
	checkBoundTo(t, b, "h1", "task-1")
	if bal, entries := sumsUp(t, b, "acme"); bal.Amount != 4 || bal.Held != 6 || len(entries) != 2 {
		t.Fatalf("balance %+v and %d entries after the create; want 4, 6 held, the credit and h1's entry", bal, len(entries))
	}
	if got := budgetSpent(t, b, "k", BudgetDay, bookNow); got != 6 {
		t.Fatalf("the key's counter = %d; want 6", got)
	}
}

// Creates of one task id at once, each with a hold of its own (or none: an unpriced create): one
// is made and binds its hold; the others answer ErrExists and leave their holds open and
// unbound. Several rounds, each of a new id, so that the creates overlap in every way.
func TestBadgerCreatesOfOneTaskID(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	for round := range 20 {
		createsOfOneTaskID(t, b, fmt.Sprint("task-", round))
	}
}

func createsOfOneTaskID(t *testing.T, b *Badger, taskID string) {
	t.Helper()
	ctx := context.Background()
	const n = 8
	holdID := func(i int) string { return fmt.Sprint(taskID, "-h", i) }
	for i := range n {
		if _, _, err := b.Hold(ctx, Hold{ID: holdID(i), NewID: true, Account: "acme", Amount: 1, Deadline: bookNow.Add(time.Minute)}, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			task := boundTask(taskID, holdID(i))
			if i%4 == 3 {
				task.HoldID = "" // an unpriced create of the same id
			}
			<-start
			_, errs[i] = b.CreateTask(ctx, task)
		})
	}
	close(start)
	wg.Wait()
	made := -1
	for i, err := range errs {
		switch {
		case err == nil && made < 0:
			made = i
		case err == nil:
			t.Fatalf("creates %d and %d of %s both succeeded", made, i, taskID)
		case !errors.Is(err, ErrExists):
			t.Fatalf("create %d: %v; want ErrExists", i, err)
		}
	}
	if made < 0 {
		t.Fatal("no create succeeded")
	}
	stored, err := b.Task(ctx, taskID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if i == made && i%4 != 3 {
			if stored.HoldID != holdID(i) {
				t.Fatalf("the stored task carries %q; the create that succeeded carried %s", stored.HoldID, holdID(i))
			}
			checkBoundTo(t, b, holdID(i), taskID)
			continue
		}
		if h, err := b.HoldByID(ctx, holdID(i)); err != nil || h.Bound || h.State != HoldOpen {
			t.Fatalf("the hold %s of a create that did not make the task = %+v, %v; want open and unbound", holdID(i), h, err)
		}
	}
}

// A record too large for the ledger's batch is created in a transaction of its own, which
// binds the hold too; a transient hold is recorded first, for that transaction to find.
func TestBadgerCreateOfALargeRecordBindsItsHold(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	for _, transient := range []bool{false, true} {
		holdID, taskID := fmt.Sprint("h-", transient), fmt.Sprint("task-", transient)
		if _, _, err := b.Hold(ctx, Hold{ID: holdID, NewID: true, Account: "acme", Amount: 5, Deadline: bookNow.Add(time.Minute), Transient: transient}, bookNow); err != nil {
			t.Fatal(err)
		}
		task := boundTask(taskID, holdID)
		task.Request = []byte(`{"prompt":"` + strings.Repeat("a", maxBatchedTaskRecord) + `"}`)
		if _, err := b.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		checkBoundTo(t, b, holdID, taskID)
		if _, err := b.CreateTask(ctx, task); !errors.Is(err, ErrExists) {
			t.Fatalf("the create made again = %v; want ErrExists", err)
		}
	}
	if bal, entries := sumsUp(t, b, "acme"); bal.Held != 10 || len(entries) != 2 {
		t.Fatalf("balance %+v, %d entries; want both holds recorded and held", bal, len(entries))
	}
}

// A hold whose binding is committed leaves the book's memory (with the batch that wrote it) at
// the BindHold that follows its task's create, or at the BindHold that bound it: the task's end
// reads it back from Badger and ends it once.
func TestBadgerBoundHoldLeavesMemory(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	for _, h := range []Hold{
		{ID: "h-create", NewID: true, Account: "acme", Amount: 10, Transient: true, Deadline: bookNow.Add(time.Minute)},
		{ID: "h-bind", NewID: true, Account: "acme", Amount: 20, Deadline: bookNow.Add(time.Minute)},
	} {
		if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.CreateTask(ctx, boundTask("task-1", "h-create")); err != nil {
		t.Fatal(err)
	}
	if _, inMemory := b.ledger.holds.Load("h-create"); !inMemory {
		t.Fatal("the create's hold left memory before the BindHold after it")
	}
	for hold, task := range map[string]string{"h-create": "task-1", "h-bind": "task-2"} {
		if err := b.BindHold(ctx, hold, task); err != nil {
			t.Fatal(err)
		}
		if _, inMemory := b.ledger.holds.Load(hold); inMemory {
			t.Fatalf("%s is still in memory once bound and committed", hold)
		}
		checkBoundTo(t, b, hold, task)
		if _, err := b.Settle(ctx, hold, 5, bookNow); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Settle(ctx, hold, 5, bookNow); !errors.Is(err, ErrHoldEnded) {
			t.Fatalf("settling %s again = %v; want ErrHoldEnded", hold, err)
		}
	}
	if bal, entries := sumsUp(t, b, "acme"); bal.Amount != 90 || bal.Held != 0 || len(entries) != 5 {
		t.Fatalf("balance %+v, %d entries; want 90, nothing held, a credit and two holds settled", bal, len(entries))
	}
}
