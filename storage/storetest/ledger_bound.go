package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerBalanceBound: a credit that would take a balance past ±MaxAmount, where a backend
// would stop computing it exactly (or overflow), is ErrBalanceBound and changes nothing, its
// idempotency key included; credits up to the bound, and adjustments back from it, are taken.
func testLedgerBalanceBound(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "rich", storage.MaxAmount, "b1")
	for _, c := range []storage.Credit{
		{Account: "rich", Amount: 1, IdempotencyKey: "b2"},
		{Account: "rich", Amount: storage.MaxAmount, IdempotencyKey: "b3"},
	} {
		if _, err := s.Credit(ctx, c, ledgerNow); !errors.Is(err, storage.ErrBalanceBound) {
			t.Fatalf("Credit(%d) past the bound = %v, want ErrBalanceBound", c.Amount, err)
		}
	}
	checkLedger(t, s, "rich", storage.MaxAmount, 0)
	mustCredit(t, s, "rich", -unit, "b2") // the refused credit's key is free
	mustCredit(t, s, "rich", unit, "b4")
	checkLedger(t, s, "rich", storage.MaxAmount, 0)

	mustCredit(t, s, "poor", -storage.MaxAmount, "p1")
	if _, err := s.Credit(ctx, storage.Credit{Account: "poor", Amount: -1, IdempotencyKey: "p2"}, ledgerNow); !errors.Is(err, storage.ErrBalanceBound) {
		t.Fatalf("an adjustment past -MaxAmount = %v, want ErrBalanceBound", err)
	}
	checkLedger(t, s, "poor", -storage.MaxAmount, 0)
}

// testLedgerBalanceBoundCountsHolds: the bound holds for the balance every open hold's end can
// leave, not only for the balance available now: a release gives the whole hold back, so a
// credit is checked against the balance plus what is held. At MaxAmount less an open hold of
// 10, a credit of 5 is ErrBalanceBound (its release would leave MaxAmount+5), and changes
// nothing; once the hold is settled at 4, a credit of 4 fits, and one more unit does not.
func testLedgerBalanceBoundCountsHolds(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "rich", storage.MaxAmount, "b1")
	mustHold(t, s, storage.Hold{ID: "bound-h1", Account: "rich", Amount: 10 * unit})
	mustHold(t, s, storage.Hold{ID: "bound-h2", Account: "rich", Amount: 2 * unit})
	if _, err := s.Credit(ctx, storage.Credit{Account: "rich", Amount: 5 * unit, IdempotencyKey: "b2"}, ledgerNow); !errors.Is(err, storage.ErrBalanceBound) {
		t.Fatalf("a credit of 5 at MaxAmount with 12 held = %v, want ErrBalanceBound", err)
	}
	checkLedger(t, s, "rich", storage.MaxAmount-12*unit, 12*unit)
	if _, err := s.Release(ctx, "bound-h2", "test", ledgerNow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(ctx, "bound-h1", 4*unit, ledgerNow); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, s, "rich", storage.MaxAmount-4*unit, 0)
	mustCredit(t, s, "rich", 4*unit, "b2") // the refused credit's key is free
	if _, err := s.Credit(ctx, storage.Credit{Account: "rich", Amount: 1, IdempotencyKey: "b3"}, ledgerNow); !errors.Is(err, storage.ErrBalanceBound) {
		t.Fatalf("a credit past MaxAmount = %v, want ErrBalanceBound", err)
	}
	// Holds do not lower the bound either way: an adjustment down to -MaxAmount is taken with a
	// hold open (its release can only raise the balance).
	mustHold(t, s, storage.Hold{ID: "bound-h3", Account: "rich", Amount: unit})
	mustCredit(t, s, "rich", -storage.MaxAmount, "b4")
	mustCredit(t, s, "rich", -storage.MaxAmount+unit, "b5")
	checkLedger(t, s, "rich", -storage.MaxAmount, unit)
	if _, err := s.Credit(ctx, storage.Credit{Account: "rich", Amount: -1, IdempotencyKey: "b6"}, ledgerNow); !errors.Is(err, storage.ErrBalanceBound) {
		t.Fatalf("an adjustment past -MaxAmount = %v, want ErrBalanceBound", err)
	}
	if _, err := s.Release(ctx, "bound-h3", "test", ledgerNow); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, s, "rich", -storage.MaxAmount+unit, 0)
}
