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
