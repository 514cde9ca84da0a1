package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerReleaseOverdueLeavesBound: the reconciler's release (ReleaseOverdue) of a hold that
// OverdueHolds listed, and that its task's create bound since, answers ErrHoldBound and leaves
// the hold open and bound, so that the task's settlement charges it; an unbound hold it
// releases as Release does, once.
func testLedgerReleaseOverdueLeavesBound(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 10*unit, "c")
	mustHold(t, s, storage.Hold{ID: "late", Account: "acme", Amount: 2 * unit, Deadline: ledgerNow.Add(time.Minute)})
	mustHold(t, s, storage.Hold{ID: "lost", Account: "acme", Amount: unit, Deadline: ledgerNow.Add(time.Minute)})
	due := ledgerNow.Add(time.Hour)
	overdue, err := s.OverdueHolds(ctx, due, 10)
	if err != nil || len(overdue) != 2 {
		t.Fatalf("OverdueHolds = %+v, %v; want both holds", overdue, err)
	}

	// The task's create binds "late" after the reconciler listed it.
	if err := s.BindHold(ctx, "late", "task-late"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseOverdue(ctx, "late", "overdue", due); !errors.Is(err, storage.ErrHoldBound) {
		t.Fatalf("ReleaseOverdue of a hold bound since it was listed = %v; want ErrHoldBound", err)
	}
	if h, err := s.HoldByID(ctx, "late"); err != nil || h.State != storage.HoldOpen || !h.Bound {
		t.Fatalf("the bound hold after the reconciler = %+v, %v; want open and bound", h, err)
	}
	e, err := s.ReleaseOverdue(ctx, "lost", "overdue", due)
	if err != nil || e.Kind != storage.EntryRelease || e.Amount != unit || e.Note != "overdue" {
		t.Fatalf("ReleaseOverdue of an unbound hold = %+v, %v; want its release", e, err)
	}
	if _, err := s.ReleaseOverdue(ctx, "lost", "overdue", due); !errors.Is(err, storage.ErrHoldEnded) {
		t.Fatalf("a second ReleaseOverdue = %v; want ErrHoldEnded", err)
	}
	if _, err := s.ReleaseOverdue(ctx, "nope", "overdue", due); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ReleaseOverdue of an unknown hold = %v; want ErrNotFound", err)
	}

	// The task's finish settles it: the charge is made.
	if _, err := s.Settle(ctx, "late", 2*unit, due); err != nil {
		t.Fatalf("the task's settlement of its hold: %v", err)
	}
	checkLedger(t, s, "acme", 8*unit, 0)
}
