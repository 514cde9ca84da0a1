package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// A hold with a NewID is taken without a look-up by ID on disk; while it is in memory, Hold is
// still idempotent by its ID, and the ledger sums as for any hold.
func TestBadgerNewIDHold(t *testing.T) {
	ctx := context.Background()
	b := openBook(t, t.TempDir())
	defer b.Close()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 10, IdempotencyKey: "c1"}, bookNow); err != nil {
		t.Fatal(err)
	}
	for _, transient := range []bool{false, true} {
		id := "fresh-recorded"
		if transient {
			id = "fresh-transient"
		}
		h := Hold{ID: id, NewID: true, Transient: transient, Account: "acme", Amount: 4, Deadline: bookNow.Add(DefaultHoldDeadline)}
		first, _, err := b.Hold(ctx, h, bookNow)
		if err != nil {
			t.Fatalf("Hold(%s) = %v", id, err)
		}
		again, _, err := b.Hold(ctx, h, bookNow)
		if err != nil || again.ID != first.ID || again.Created != first.Created || again.State != HoldOpen {
			t.Fatalf("Hold(%s) again = %+v, %v; want the first hold %+v", id, again, err, first)
		}
	}
	// Both holds count once each: 10 - 4 - 4 leaves 2, which a third hold of 4 does not fit.
	if _, _, err := b.Hold(ctx, Hold{ID: "third", NewID: true, Account: "acme", Amount: 4, Deadline: bookNow.Add(DefaultHoldDeadline)}, bookNow); err == nil {
		t.Fatal("a third hold of 4 against 2 left was taken")
	}
	if _, err := b.Settle(ctx, "fresh-transient", 3, bookNow); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Release(ctx, "fresh-recorded", "test", bookNow); err != nil {
		t.Fatal(err)
	}
	if bal, _ := sumsUp(t, b, "acme"); bal.Amount != 7 || bal.Held != 0 {
		t.Fatalf("balance %+v, want 7 with nothing held", bal)
	}
}

// A request's hold (transient, with a NewID) leaves no hold record once its request ends it:
// its two entries are its record. HoldByID and a second end then answer ErrNotFound. A
// transient hold without a NewID, one bound to a task (recorded by BindHold) and one released
// past its deadline (the reconciler's) keep theirs: a second end answers ErrHoldEnded.
func TestBadgerEndedRequestHoldLeavesNoRecord(t *testing.T) {
	ctx := context.Background()
	b := openBook(t, t.TempDir())
	defer b.Close()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100, IdempotencyKey: "c1"}, bookNow); err != nil {
		t.Fatal(err)
	}
	take := func(id string, newID bool) {
		t.Helper()
		h := Hold{ID: id, NewID: newID, Transient: true, Account: "acme", Amount: 10, Deadline: bookNow.Add(DefaultHoldDeadline)}
		if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
			t.Fatal(err)
		}
	}
	take("request", true)
	take("no-new-id", false)
	take("bound", true)
	take("overdue", true)
	if err := b.BindHold(ctx, "bound", "task-1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"request", "no-new-id", "bound"} {
		if _, err := b.Settle(ctx, id, 4, bookNow); err != nil {
			t.Fatalf("Settle(%s) = %v", id, err)
		}
	}
	// The reconciler's release, past the deadline: its request's own end comes after.
	if _, err := b.Release(ctx, "overdue", "overdue", bookNow.Add(DefaultHoldDeadline)); err != nil {
		t.Fatal(err)
	}
	if h, err := b.HoldByID(ctx, "request"); !errors.Is(err, ErrNotFound) {
		t.Errorf("HoldByID of the ended request hold = %+v, %v; want ErrNotFound", h, err)
	}
	if _, err := b.Settle(ctx, "request", 4, bookNow); !errors.Is(err, ErrNotFound) {
		t.Errorf("a second Settle of the request hold = %v; want ErrNotFound", err)
	}
	for _, id := range []string{"no-new-id", "bound", "overdue"} {
		if h, err := b.HoldByID(ctx, id); err != nil || h.State == HoldOpen {
			t.Errorf("HoldByID(%s) = %+v, %v; want it ended", id, h, err)
		}
		if _, err := b.Settle(ctx, id, 4, bookNow); !errors.Is(err, ErrHoldEnded) {
			t.Errorf("a second Settle of %s = %v; want ErrHoldEnded", id, err)
		}
	}
	err := b.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get([]byte(holdKey("request")))
		return err
	})
	if !errors.Is(err, badger.ErrKeyNotFound) {
		t.Errorf("the request hold's record: %v; want none", err)
	}
	bal, entries := sumsUp(t, b, "acme")
	if bal.Amount != 100-3*4 || bal.Held != 0 || len(entries) != 9 {
		t.Fatalf("balance %+v with %d entries; want 88, nothing held, 9 entries", bal, len(entries))
	}
	kinds := ""
	for _, e := range entries {
		if e.HoldID == "request" {
			kinds += fmt.Sprintf("%s %d %d, ", e.Kind, e.Amount, e.Charged)
		}
	}
	if kinds != "hold -10 0, settle 6 4, " {
		t.Errorf("the request hold's entries: %s", kinds)
	}
}
