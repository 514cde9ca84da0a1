package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerRenewHold: RenewHold moves an open, unbound hold's deadline later, transient or
// recorded, so that HoldByID and OverdueHolds report the new deadline, OverdueHolds no longer
// lists it at the old deadline and the reconciler's
// release of it, listed before the renewal, answers ErrHoldNotDue and leaves it open for its
// request to settle; a repeated Hold of it answers the new deadline too; at the new deadline it
// is overdue again. An earlier deadline changes
// nothing; a bound, ended or unknown hold is not renewed.
func testLedgerRenewHold(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 10*unit, "c")
	first := ledgerNow.Add(time.Minute)
	mustHold(t, s, storage.Hold{ID: "stream", Account: "acme", Amount: 2 * unit, Deadline: first, Transient: true})
	mustHold(t, s, storage.Hold{ID: "recorded", Account: "acme", Amount: unit, Deadline: first})
	mustHold(t, s, storage.Hold{ID: "task", Account: "acme", Amount: unit, Deadline: first})
	if err := s.BindHold(ctx, "task", "task-1"); err != nil {
		t.Fatal(err)
	}
	due := first.Add(time.Second)
	listed, err := s.OverdueHolds(ctx, due, 10)
	if err != nil || len(listed) != 2 {
		t.Fatalf("OverdueHolds before any renewal = %+v, %v; want the two unbound holds", listed, err)
	}

	// The requests renew their holds after the reconciler listed them.
	later := ledgerNow.Add(10 * time.Minute)
	for _, id := range []string{"stream", "recorded"} {
		if err := s.RenewHold(ctx, id, later); err != nil {
			t.Fatalf("RenewHold(%s): %v", id, err)
		}
		if _, err := s.ReleaseOverdue(ctx, id, "overdue", due); !errors.Is(err, storage.ErrHoldNotDue) {
			t.Fatalf("ReleaseOverdue of %s renewed since it was listed = %v; want ErrHoldNotDue", id, err)
		}
		if h, err := s.HoldByID(ctx, id); err != nil || !h.Deadline.Equal(later) {
			t.Fatalf("HoldByID(%s) after its renewal = %+v, %v; want the deadline %v", id, h, err, later)
		}
		// A repeated Hold answers the hold as it now stands: the renewed deadline, not the one
		// it was first taken with (nor the repeat's own), and changes nothing.
		again, _, err := s.Hold(ctx, storage.Hold{ID: id, Account: "acme", Amount: unit, Deadline: first}, ledgerNow)
		if err != nil || !again.Deadline.Equal(later) || again.State != storage.HoldOpen {
			t.Fatalf("Hold(%s) again after its renewal = %+v, %v; want it open with the deadline %v", id, again, err, later)
		}
		// An earlier deadline than the one it has changes nothing.
		if err := s.RenewHold(ctx, id, first); err != nil {
			t.Fatalf("RenewHold(%s) to an earlier deadline: %v", id, err)
		}
		if h, err := s.HoldByID(ctx, id); err != nil || !h.Deadline.Equal(later) {
			t.Fatalf("HoldByID(%s) after an earlier deadline = %+v, %v; want it still %v", id, h, err, later)
		}
	}
	if h, err := s.HoldByID(ctx, "task"); err != nil || !h.Deadline.Equal(first) {
		t.Fatalf("HoldByID of the bound hold = %+v, %v; want the deadline it was taken with, %v", h, err, first)
	}
	if listed, err := s.OverdueHolds(ctx, due, 10); err != nil || len(listed) != 0 {
		t.Fatalf("OverdueHolds after the renewals = %+v, %v; want none", listed, err)
	}
	listed, err = s.OverdueHolds(ctx, later.Add(time.Second), 10)
	if err != nil || len(listed) != 2 {
		t.Fatalf("OverdueHolds past the new deadline = %+v, %v; want both renewed holds", listed, err)
	}
	for _, h := range listed {
		if !h.Deadline.Equal(later) {
			t.Fatalf("OverdueHolds lists %s with the deadline %v; want the renewed %v", h.ID, h.Deadline, later)
		}
	}

	if err := s.RenewHold(ctx, "task", later); !errors.Is(err, storage.ErrHoldBound) {
		t.Fatalf("RenewHold of a bound hold = %v; want ErrHoldBound", err)
	}
	if err := s.RenewHold(ctx, "nope", later); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("RenewHold of an unknown hold = %v; want ErrNotFound", err)
	}

	// The stream's own end settles its hold; the reconciler releases the other at its new
	// deadline, once.
	if _, err := s.Settle(ctx, "stream", 3*unit, due); err != nil {
		t.Fatalf("the request's settlement of its renewed hold: %v", err)
	}
	if err := s.RenewHold(ctx, "stream", later.Add(time.Hour)); !errors.Is(err, storage.ErrHoldEnded) {
		t.Fatalf("RenewHold of an ended hold = %v; want ErrHoldEnded", err)
	}
	if _, err := s.ReleaseOverdue(ctx, "recorded", "overdue", later.Add(time.Second)); err != nil {
		t.Fatalf("ReleaseOverdue past the new deadline: %v", err)
	}
	if _, err := s.Settle(ctx, "task", unit, due); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, s, "acme", 6*unit, 0)
}
