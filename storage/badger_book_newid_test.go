package storage

import (
	"context"
	"testing"
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
