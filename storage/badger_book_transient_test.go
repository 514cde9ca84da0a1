package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A transient hold writes nothing until it ends; its end writes its hold entry and its end in
// one commit. A crash while it is open (the store's files copied, as a killed process leaves
// them) loses it as released: no entry, nothing held.
func TestBadgerTransientHoldWritesOnlyAtItsEnd(t *testing.T) {
	dir := t.TempDir()
	b := openBook(t, dir)
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	commits := 0
	b.ledger.queue.failCommit = func() error { commits++; return nil }
	for _, id := range []string{"ended", "open"} {
		if _, _, err := b.Hold(ctx, Hold{ID: id, Account: "acme", Amount: 30, Deadline: bookNow.Add(time.Hour), Transient: true}, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	if commits != 0 {
		t.Fatalf("two transient holds made %d commits; want none", commits)
	}
	if _, _, err := b.Hold(ctx, Hold{ID: "over", Account: "acme", Amount: 41, Deadline: bookNow.Add(time.Hour), Transient: true}, bookNow); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("a hold past what the transient holds left = %v; want ErrInsufficient", err)
	}
	if _, err := b.Settle(ctx, "ended", 10, bookNow); err != nil {
		t.Fatal(err)
	}
	if commits != 1 {
		t.Fatalf("the end of a transient hold made %d commits; want one", commits)
	}
	b.ledger.queue.failCommit = nil
	bal, entries := sumsUp(t, b, "acme")
	if bal.Amount != 90 || bal.Held != 0 || len(entries) != 3 || entries[1].Kind != EntryHold || entries[2].Kind != EntrySettle {
		t.Fatalf("balance %+v, entries %+v; want 90 and the credit, the hold and its settlement", bal, entries)
	}

	killed := t.TempDir()
	if err := copyStoreFiles(dir, killed); err != nil {
		t.Fatal(err)
	}
	c := openBook(t, killed)
	defer c.Close()
	if _, err := c.HoldByID(ctx, "open"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an open transient hold after a crash: %v; want it unknown", err)
	}
	if overdue, err := c.OverdueHolds(ctx, bookNow.Add(2*time.Hour), 10); err != nil || len(overdue) != 0 {
		t.Fatalf("OverdueHolds after the crash = %+v, %v; want none", overdue, err)
	}
	if bal, _ := sumsUp(t, c, "acme"); bal.Amount != 90 || bal.Held != 0 {
		t.Fatalf("balance after the crash %+v; want 90, nothing held", bal)
	}
}

// Open transient holds outlive a failed batch (memory is read again from Badger, and they are
// counted again), and keep their account in memory however full the book is.
func TestBadgerTransientHoldsOutliveAFailedBatchAndEviction(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	b.ledger.maxAccounts = 2
	ctx := context.Background()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	budget := Budget{Limit: 60, Period: BudgetMonth}
	if _, _, err := b.Hold(ctx, Hold{ID: "t", Account: "acme", KeyID: "k", Amount: 40, Budget: budget, Deadline: bookNow.Add(time.Hour), Transient: true}, bookNow); err != nil {
		t.Fatal(err)
	}
	b.ledger.queue.failCommit = func() error { return errors.New("disk full") }
	if _, _, err := b.Hold(ctx, Hold{ID: "lost", Account: "acme", KeyID: "k", Amount: 10, Budget: budget, Deadline: bookNow.Add(time.Hour)}, bookNow); err == nil {
		t.Fatal("a hold whose batch failed succeeded")
	}
	b.ledger.queue.failCommit = nil
	for i := range 6 { // other accounts fill the book
		if _, err := b.Credit(ctx, Credit{Account: fmt.Sprint("other", i), Amount: 1, IdempotencyKey: "c"}, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := b.HoldByID(ctx, "t"); err != nil || h.State != HoldOpen {
		t.Fatalf("the transient hold = %+v, %v; want it open", h, err)
	}
	// Still counted: the budget has 20 left, the balance 60.
	if _, _, err := b.Hold(ctx, Hold{ID: "over", Account: "acme", KeyID: "k", Amount: 21, Budget: budget, Deadline: bookNow.Add(time.Hour)}, bookNow); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("a hold past the budget left = %v; want ErrBudgetExceeded", err)
	}
	if _, err := b.Settle(ctx, "t", 25, bookNow); err != nil {
		t.Fatal(err)
	}
	if bal, entries := sumsUp(t, b, "acme"); bal.Amount != 75 || bal.Held != 0 || len(entries) != 3 {
		t.Fatalf("balance %+v with %d entries; want 75 and 3 entries", bal, len(entries))
	}
	if _, _, err := b.Hold(ctx, Hold{ID: "fits", Account: "acme", KeyID: "k", Amount: 35, Budget: budget, Deadline: bookNow.Add(time.Hour)}, bookNow); err != nil {
		t.Fatalf("a hold of the budget left (60 - 25): %v", err)
	}
}
