package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerReconciledAnswered: a hold that the reconciler released (ReleaseOverdue) is marked
// so, in the compare-and-set that ended it, and every later BindHold, Settle or Release of it
// answers ErrHoldReconciled (which is ErrHoldEnded too), whether the hold was recorded or
// transient, and whether or not the task's create (CreateTask with its HoldID) came between:
// the create that stalled between its task record and its BindHold learns that the reconciler's
// release, which gave back its active-task slot, came first. A hold ended by its request is
// ErrHoldEnded alone.
func testLedgerReconciledAnswered(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 10*unit, "c")
	deadline := ledgerNow.Add(time.Minute)
	due := ledgerNow.Add(time.Hour)
	task := func(id, holdID string) storage.Task {
		return storage.Task{ID: id, Kind: storage.KindVideo, Account: "acme", KeyID: "k1", Status: "queued",
			CreatedAt: ledgerNow.Unix(), HoldID: holdID, HoldAmount: unit, Active: true}
	}
	for _, c := range []struct {
		id        string
		transient bool
		created   bool // the task's record is written between the release and BindHold
	}{{"r-recorded", false, false}, {"r-transient", true, false}, {"r-created", true, true}, {"r-created-recorded", false, true}} {
		mustHold(t, s, storage.Hold{ID: c.id, Account: "acme", KeyID: "k1", Ref: "active-slot", Amount: unit, Deadline: deadline, Transient: c.transient})
		if _, err := s.ReleaseOverdue(ctx, c.id, "overdue", due); err != nil {
			t.Fatalf("%s: ReleaseOverdue: %v", c.id, err)
		}
		if c.created {
			if _, err := s.CreateTask(ctx, task("task-"+c.id, c.id)); err != nil {
				t.Fatalf("%s: the create's record: %v", c.id, err)
			}
		}
		err := s.BindHold(ctx, c.id, "task-"+c.id)
		if !errors.Is(err, storage.ErrHoldReconciled) || !errors.Is(err, storage.ErrHoldEnded) {
			t.Fatalf("%s: BindHold of a hold the reconciler released = %v; want ErrHoldReconciled", c.id, err)
		}
		if _, err := s.Settle(ctx, c.id, unit, due); !errors.Is(err, storage.ErrHoldReconciled) {
			t.Fatalf("%s: Settle of a hold the reconciler released = %v; want ErrHoldReconciled", c.id, err)
		}
		if _, err := s.Release(ctx, c.id, "task failed", due); !errors.Is(err, storage.ErrHoldReconciled) {
			t.Fatalf("%s: Release of a hold the reconciler released = %v; want ErrHoldReconciled", c.id, err)
		}
		if h, err := s.HoldByID(ctx, c.id); err != nil || h.State != storage.HoldReleased || !h.Reconciled || h.Bound || h.Ref != "active-slot" {
			t.Fatalf("%s: the hold = %+v, %v; want released by the reconciler, unbound", c.id, h, err)
		}
		// A repeated Hold (a retry of the create that took it) answers the hold as it stands:
		// released, and by the reconciler.
		if h, _, err := s.Hold(ctx, storage.Hold{ID: c.id, Account: "acme", KeyID: "k1", Ref: "active-slot", Amount: unit, Deadline: deadline, Transient: c.transient}, due); err != nil || h.State != storage.HoldReleased || !h.Reconciled {
			t.Fatalf("%s: a repeated Hold of a hold the reconciler released = %+v, %v; want it released, marked reconciled", c.id, h, err)
		}
	}
	checkLedger(t, s, "acme", 10*unit, 0)

	// Ended by its request (or its task's finish), a hold is not the reconciler's.
	mustHold(t, s, storage.Hold{ID: "own", Account: "acme", Amount: unit, Deadline: deadline})
	if _, err := s.Release(ctx, "own", "refused", ledgerNow); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"BindHold": s.BindHold(ctx, "own", "task-own"),
		"Settle":   second(s.Settle(ctx, "own", unit, due)),
		"Overdue":  second(s.ReleaseOverdue(ctx, "own", "overdue", due)),
	} {
		if !errors.Is(err, storage.ErrHoldEnded) || errors.Is(err, storage.ErrHoldReconciled) {
			t.Fatalf("%s of a hold its request released = %v; want ErrHoldEnded alone", name, err)
		}
	}
	if h, err := s.HoldByID(ctx, "own"); err != nil || h.Reconciled {
		t.Fatalf("a hold its request released = %+v, %v; want it not marked reconciled", h, err)
	}
}

// testLedgerBindOrReconcile races each hold's BindHold (its task's create) with the reconciler's
// ReleaseOverdue: exactly one of them wins each hold, and the loser is told which (the create
// ErrHoldReconciled, the reconciler ErrHoldBound), so that exactly one side gives back the
// create's active-task slot.
func testLedgerBindOrReconcile(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 100*unit, "c")
	const n = 40
	due := ledgerNow.Add(time.Hour)
	for i := range n {
		mustHold(t, s, storage.Hold{ID: fmt.Sprint("race-", i), Account: "acme", KeyID: "k1", Ref: "active-slot",
			Amount: unit, Deadline: ledgerNow.Add(time.Minute), Transient: i%2 == 0})
	}
	var wg sync.WaitGroup
	var binds, releases [n]error
	for i := range n {
		id := fmt.Sprint("race-", i)
		wg.Go(func() { binds[i] = s.BindHold(ctx, id, "task-"+id) })
		wg.Go(func() { _, releases[i] = s.ReleaseOverdue(ctx, id, "overdue", due) })
	}
	wg.Wait()
	bound := 0
	for i := range n {
		switch b, r := binds[i], releases[i]; {
		case b == nil && errors.Is(r, storage.ErrHoldBound):
			bound++
		case r == nil && errors.Is(b, storage.ErrHoldReconciled):
		default:
			t.Fatalf("hold race-%d: BindHold = %v, ReleaseOverdue = %v; want one to win and the other told", i, b, r)
		}
	}
	checkLedger(t, s, "acme", 100*unit-int64(bound)*unit, int64(bound)*unit)
}

// second is the error of a two-valued call.
func second[T any](_ T, err error) error { return err }
