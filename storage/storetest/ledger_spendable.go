package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerSpendable: Spendable answers what a hold of 0 would, and writes nothing: an
// unlimited account, and a limited one at exactly 0, may start a request that holds nothing;
// one below zero may not (ErrInsufficient), nor may a key whose budget for the period was
// charged past its limit (ErrBudgetExceeded), until a top-up or the next period; a budget
// exactly used up still admits it.
func testLedgerSpendable(t *testing.T, s storage.Store) {
	ctx := context.Background()
	daily := storage.Budget{Limit: 2 * unit, Period: storage.BudgetDay}
	check := func(what, account, key string, budget storage.Budget, now time.Time, want error) {
		t.Helper()
		err := s.Spendable(ctx, account, key, budget, now)
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Fatalf("%s: Spendable = %v; want %v", what, err, want)
		}
		if want == storage.ErrInsufficient && errors.Is(err, storage.ErrBudgetExceeded) {
			t.Fatalf("%s: Spendable = %v; want the balance's error, not the budget's", what, err)
		}
	}
	check("an account without entries", "nobody", "k0", storage.Budget{}, ledgerNow, nil)
	check("an unlimited account with a fresh budget", "nobody", "k0", daily, ledgerNow, nil)

	mustCredit(t, s, "acme", 2*unit, "c1")
	mustHold(t, s, storage.Hold{ID: "h1", Account: "acme", KeyID: "k1", Amount: 2 * unit, Budget: daily})
	check("a balance taken to 0 by an open hold, a budget used up exactly", "acme", "k1", daily, ledgerNow, nil)
	if _, err := s.Settle(ctx, "h1", 3*unit, ledgerNow); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, s, "acme", -unit, 0)
	check("an overdrawn account", "acme", "k1", storage.Budget{}, ledgerNow, storage.ErrInsufficient)
	mustCredit(t, s, "acme", 5*unit, "c2")
	check("a key charged past its day's budget", "acme", "k1", daily, ledgerNow, storage.ErrBudgetExceeded)
	check("another key of the account", "acme", "k2", daily, ledgerNow, nil)
	check("the key without a budget", "acme", "k1", storage.Budget{}, ledgerNow, nil)
	check("the key's next day", "acme", "k1", daily, ledgerNow.Add(24*time.Hour), nil)
	// An unlimited account charged over its hold is below zero, and may go on.
	mustHold(t, s, storage.Hold{ID: "u1", Account: "open", Amount: unit})
	if _, err := s.Settle(ctx, "u1", 2*unit, ledgerNow); err != nil {
		t.Fatal(err)
	}
	check("an unlimited account below zero", "open", "k3", storage.Budget{}, ledgerNow, nil)
	// Nothing was written: the ledgers have their entries only.
	if got := len(checkLedger(t, s, "acme", 4*unit, 0)); got != 4 {
		t.Fatalf("acme has %d entries; want 4 (credit, hold, settle, credit)", got)
	}
	if got := len(checkLedger(t, s, "nobody", 0, 0)); got != 0 {
		t.Fatalf("Spendable wrote %d entries", got)
	}
}
