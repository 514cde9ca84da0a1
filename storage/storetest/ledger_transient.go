package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerTransient: a transient hold (Hold.Transient) counts against the balance and the
// key's budget at once, is answered by HoldByID and by a second Hold with its ID, ends once,
// is listed by OverdueHolds past its deadline, and leaves the ledger with its hold entry and
// its end. A backend may leave it out of Balance and LedgerPage while it is open (Badger) or
// record it at once (Redis); either way what they answer sums up, at every step.
func testLedgerTransient(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 10*unit, "c")
	budget := storage.Budget{Limit: 8 * unit, Period: storage.BudgetDay}
	hold := func(id string, amount int64, deadline time.Duration) (storage.Hold, storage.LedgerEntry, error) {
		return s.Hold(ctx, storage.Hold{ID: id, Account: "acme", KeyID: "k", Amount: amount, Budget: budget,
			Deadline: ledgerNow.Add(deadline), Transient: true}, ledgerNow)
	}
	first, entry, err := hold("t1", 4*unit, time.Minute)
	if err != nil || first.State != storage.HoldOpen || entry.Kind != storage.EntryHold || entry.Amount != -4*unit {
		t.Fatalf("Hold = %+v %+v %v", first, entry, err)
	}
	open := func(wantHeld int64) {
		t.Helper()
		bal, err := s.Balance(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		switch bal.Held {
		case 0: // kept out of the ledger while open
			checkLedger(t, s, "acme", 10*unit, 0)
		case wantHeld: // recorded at once
			checkLedger(t, s, "acme", 10*unit-wantHeld, wantHeld)
		default:
			t.Fatalf("balance %+v with transient holds of %d open", bal, wantHeld)
		}
	}
	open(4 * unit)
	if again, e2, err := hold("t1", 4*unit, time.Minute); err != nil || again.ID != "t1" || again.State != storage.HoldOpen || e2.Amount != entry.Amount {
		t.Fatalf("Hold again = %+v %+v %v; want the first", again, e2, err)
	}
	if h, err := s.HoldByID(ctx, "t1"); err != nil || h.State != storage.HoldOpen || h.Amount != 4*unit {
		t.Fatalf("HoldByID = %+v, %v", h, err)
	}
	// The budget (8) has 4 left, the balance 6.
	if _, _, err := hold("t2", 5*unit, time.Minute); !errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("a hold past the budget left = %v; want ErrBudgetExceeded", err)
	}
	if _, _, err := s.Hold(ctx, storage.Hold{ID: "t3", Account: "acme", Amount: 7 * unit, Deadline: ledgerNow.Add(time.Minute), Transient: true}, ledgerNow); !errors.Is(err, storage.ErrInsufficient) {
		t.Fatalf("a hold past the balance left = %v; want ErrInsufficient", err)
	}
	if _, _, err := hold("t4", 3*unit, 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	open(7 * unit)

	// Past its deadline it is the reconciler's, and ends once.
	overdue, err := s.OverdueHolds(ctx, ledgerNow.Add(10*time.Minute), 10)
	if err != nil || len(overdue) != 1 || overdue[0].ID != "t1" {
		t.Fatalf("OverdueHolds = %+v, %v; want t1", overdue, err)
	}
	won := winners(t, 4, func(i int) (bool, error) {
		var err error
		if i%2 == 0 {
			_, err = s.Settle(ctx, "t1", 3*unit, ledgerNow)
		} else {
			_, err = s.Release(ctx, "t1", "overdue", ledgerNow)
		}
		if errors.Is(err, storage.ErrHoldEnded) {
			return false, nil
		}
		return err == nil, err
	})
	if won != 1 {
		t.Fatalf("t1 ended %d times; want once", won)
	}
	ended, err := s.HoldByID(ctx, "t1")
	if err != nil || ended.State == storage.HoldOpen {
		t.Fatalf("t1 after its end = %+v, %v", ended, err)
	}
	charged := int64(0)
	if ended.State == storage.HoldSettled {
		charged = 3 * unit
	}
	if _, err := s.Settle(ctx, "t4", 2*unit, ledgerNow); err != nil {
		t.Fatal(err)
	}
	entries := checkLedger(t, s, "acme", 10*unit-charged-2*unit, 0)
	kinds := map[string]string{}
	for _, e := range entries {
		kinds[e.HoldID] += e.Kind + " "
	}
	if kinds["t1"] != "hold "+map[bool]string{true: "settle ", false: "release "}[charged > 0] || kinds["t4"] != "hold settle " || kinds["t2"]+kinds["t3"] != "" {
		t.Fatalf("entries by hold: %q", kinds)
	}
	// What the budget has left counts the settlements only: 8 - charged - 2.
	left := 8*unit - charged - 2*unit
	if _, _, err := hold("t5", left+1, time.Minute); !errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("a hold of the budget left + 1 = %v; want ErrBudgetExceeded", err)
	}
	if _, _, err := hold("t6", left, time.Minute); err != nil {
		t.Fatalf("a hold of the budget left: %v", err)
	}
}

// testLedgerTransientBound: binding a transient hold to a task records it: it is then open,
// bound, held in the balance, not the reconciler's, and ended by the task's settlement.
func testLedgerTransientBound(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 10*unit, "c")
	for i := range 3 {
		if _, _, err := s.Hold(ctx, storage.Hold{ID: fmt.Sprint("b", i), Account: "acme", Amount: 2 * unit, Deadline: ledgerNow, Transient: true}, ledgerNow); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.BindHold(ctx, "b1", "task-1"); err != nil {
		t.Fatal(err)
	}
	if h, err := s.HoldByID(ctx, "b1"); err != nil || !h.Bound || h.Ref != "task-1" || h.State != storage.HoldOpen {
		t.Fatalf("the bound hold = %+v, %v", h, err)
	}
	if bal, err := s.Balance(ctx, "acme"); err != nil || bal.Held != 2*unit && bal.Held != 6*unit {
		t.Fatalf("balance %+v, %v; want the bound hold held (and the others, if recorded at once)", bal, err)
	}
	overdue, err := s.OverdueHolds(ctx, ledgerNow.Add(time.Hour), 10)
	ids := map[string]bool{}
	for _, h := range overdue {
		ids[h.ID] = true
	}
	if err != nil || len(overdue) != 2 || !ids["b0"] || !ids["b2"] {
		t.Fatalf("OverdueHolds = %+v, %v; want b0 and b2", overdue, err)
	}
	for _, id := range []string{"b0", "b2"} {
		if _, err := s.Release(ctx, id, "overdue", ledgerNow); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Settle(ctx, "b1", unit, ledgerNow); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, s, "acme", 9*unit, 0)
}
