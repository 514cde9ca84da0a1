package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerTaskCarriesHold: the create path of a task. The hold is taken, the task recorded
// with its HoldID (a backend may bind the hold in that write), and BindHold called: the hold is
// then bound to the task whichever did it, off the reconciler's list, and ended once by the
// task's settlement. A create whose hold has ended already leaves the hold ended and is
// recorded; BindHold answers ErrHoldEnded.
func testLedgerTaskCarriesHold(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 10*unit, "c")
	task := func(id, holdID string) storage.Task {
		return storage.Task{ID: id, Kind: storage.KindVideo, Account: "acme", Status: "queued",
			CreatedAt: ledgerNow.Unix(), HoldID: holdID, HoldAmount: 2 * unit}
	}
	mustHold(t, s, storage.Hold{ID: "h1", Account: "acme", Amount: 2 * unit, Deadline: ledgerNow.Add(time.Minute)})
	if _, err := s.CreateTask(ctx, task("task-1", "h1")); err != nil {
		t.Fatal(err)
	}
	if err := s.BindHold(ctx, "h1", "task-1"); err != nil {
		t.Fatalf("BindHold after the create: %v", err)
	}
	if h, err := s.HoldByID(ctx, "h1"); err != nil || !h.Bound || h.Ref != "task-1" || h.State != storage.HoldOpen {
		t.Fatalf("the task's hold = %+v, %v; want open and bound to task-1", h, err)
	}
	if overdue, err := s.OverdueHolds(ctx, ledgerNow.Add(time.Hour), 10); err != nil || len(overdue) != 0 {
		t.Fatalf("OverdueHolds = %+v, %v; the bound hold is the task's, not the reconciler's", overdue, err)
	}
	if err := s.BindHold(ctx, "h1", "task-x"); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("binding the task's hold to another task = %v; want ErrConflict", err)
	}

	mustHold(t, s, storage.Hold{ID: "h2", Account: "acme", Amount: 2 * unit, Deadline: ledgerNow.Add(time.Minute)})
	if _, err := s.Release(ctx, "h2", "refused", ledgerNow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTask(ctx, task("task-2", "h2")); err != nil {
		t.Fatal(err)
	}
	if err := s.BindHold(ctx, "h2", "task-2"); !errors.Is(err, storage.ErrHoldEnded) {
		t.Fatalf("binding an ended hold after the create = %v; want ErrHoldEnded", err)
	}
	if h, err := s.HoldByID(ctx, "h2"); err != nil || h.State != storage.HoldReleased {
		t.Fatalf("the ended hold = %+v, %v; want it released still", h, err)
	}

	// A task that names another account's hold does not take it with its create.
	mustCredit(t, s, "other", 10*unit, "c")
	mustHold(t, s, storage.Hold{ID: "h-other", Account: "other", Amount: unit, Deadline: ledgerNow.Add(time.Minute)})
	if _, err := s.CreateTask(ctx, task("task-3", "h-other")); err != nil {
		t.Fatal(err)
	}
	if h, err := s.HoldByID(ctx, "h-other"); err != nil || h.Bound || h.State != storage.HoldOpen {
		t.Fatalf("another account's hold after acme's create named it = %+v, %v; want it open and unbound", h, err)
	}

	if _, err := s.Settle(ctx, "h1", unit, ledgerNow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(ctx, "h1", unit, ledgerNow); !errors.Is(err, storage.ErrHoldEnded) {
		t.Fatalf("settling the task's hold again = %v; want ErrHoldEnded", err)
	}
	checkLedger(t, s, "acme", 9*unit, 0)
}
