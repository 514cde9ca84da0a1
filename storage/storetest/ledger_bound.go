package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

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

// testLedgerChargesKeepTheBalanceBounded: holds and charges never take a balance below
// -MaxAmount, where Redis's scripts stop computing it exactly (and Badger's int64 wraps once
// past 2^63), on a limited account as on an unlimited (metered) one, whose holds otherwise
// always fit. A hold that would is ErrInsufficient and changes nothing; a settlement over its
// hold (a usage report that prices at the most one charge can be, MaxAmount) charges what takes
// the balance to -MaxAmount and no more, and its entry says what it charged. The balance stays
// the sum of the entries.
func testLedgerChargesKeepTheBalanceBounded(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustHold(t, s, storage.Hold{ID: "metered-h1", Account: "metered", Amount: storage.MaxAmount})
	if _, _, err := s.Hold(ctx, storage.Hold{ID: "metered-h2", Account: "metered", Amount: 1, Deadline: ledgerNow.Add(time.Minute)}, ledgerNow); !errors.Is(err, storage.ErrInsufficient) {
		t.Fatalf("a hold past -MaxAmount on an unlimited account = %v, want ErrInsufficient", err)
	}
	checkLedger(t, s, "metered", -storage.MaxAmount, storage.MaxAmount)
	if _, err := s.Release(ctx, "metered-h1", "test", ledgerNow); err != nil {
		t.Fatal(err)
	}
	for _, account := range []string{"metered", "limited"} {
		if account == "limited" {
			mustCredit(t, s, account, 20*unit, "l1")
		}
		mustHold(t, s, storage.Hold{ID: account + "-a", Account: account, Amount: 10 * unit})
		mustHold(t, s, storage.Hold{ID: account + "-b", Account: account, Amount: 10 * unit})
		before, _ := s.Balance(ctx, account)
		first, err := s.Settle(ctx, account+"-a", storage.MaxAmount, ledgerNow)
		if err != nil {
			t.Fatal(err)
		}
		second, err := s.Settle(ctx, account+"-b", storage.MaxAmount, ledgerNow)
		if err != nil {
			t.Fatal(err)
		}
		// Each charges at most what takes the balance (its hold taken) to -MaxAmount: the
		// unlimited account's first all but the second's hold, its second that hold alone.
		want1 := min(storage.MaxAmount, before.Amount+10*unit+storage.MaxAmount)
		want2 := min(storage.MaxAmount, before.Amount+10*unit-want1+10*unit+storage.MaxAmount)
		if first.Charged != want1 || second.Charged != want2 || account == "metered" && want2 != 10*unit {
			t.Fatalf("%s: charged %d and %d; want %d and %d", account, first.Charged, second.Charged, want1, want2)
		}
		checkLedger(t, s, account, -storage.MaxAmount, 0)
	}
}
