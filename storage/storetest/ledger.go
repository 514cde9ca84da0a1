package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// RunLedger runs the ledger's part of the conformance suite (Run runs it too).
func RunLedger(t *testing.T, fresh func(t *testing.T) storage.Store) {
	t.Run("LedgerHoldSettleRelease", func(t *testing.T) { testLedgerHoldSettleRelease(t, fresh(t)) })
	t.Run("LedgerIdempotent", func(t *testing.T) { testLedgerIdempotent(t, fresh(t)) })
	t.Run("LedgerEndsOnce", func(t *testing.T) { testLedgerEndsOnce(t, fresh(t)) })
	t.Run("LedgerInsufficient", func(t *testing.T) { testLedgerInsufficient(t, fresh(t)) })
	t.Run("LedgerOverEstimate", func(t *testing.T) { testLedgerOverEstimate(t, fresh(t)) })
	t.Run("LedgerBudgetDay", func(t *testing.T) { testLedgerBudgetDay(t, fresh(t)) })
	t.Run("LedgerBudgetMonth", func(t *testing.T) { testLedgerBudgetMonth(t, fresh(t)) })
	t.Run("LedgerOverdueAndBind", func(t *testing.T) { testLedgerOverdueAndBind(t, fresh(t)) })
	t.Run("LedgerPages", func(t *testing.T) { testLedgerPages(t, fresh(t)) })
	t.Run("LedgerHoldRace", func(t *testing.T) { testLedgerHoldRace(t, fresh(t)) })
	t.Run("LedgerBudgetRace", func(t *testing.T) { testLedgerBudgetRace(t, fresh(t)) })
	t.Run("LedgerEndRace", func(t *testing.T) { testLedgerEndRace(t, fresh(t)) })
	t.Run("LedgerCreditRace", func(t *testing.T) { testLedgerCreditRace(t, fresh(t)) })
	t.Run("LedgerCreditNote", func(t *testing.T) { testLedgerCreditNote(t, fresh(t)) })
	t.Run("LedgerBalanceBound", func(t *testing.T) { testLedgerBalanceBound(t, fresh(t)) })
	t.Run("LedgerBalanceBoundCountsHolds", func(t *testing.T) { testLedgerBalanceBoundCountsHolds(t, fresh(t)) })
	t.Run("LedgerChargesKeepTheBalanceBounded", func(t *testing.T) { testLedgerChargesKeepTheBalanceBounded(t, fresh(t)) })
	t.Run("LedgerTaskCarriesHold", func(t *testing.T) { testLedgerTaskCarriesHold(t, fresh(t)) })
	t.Run("LedgerTransient", func(t *testing.T) { testLedgerTransient(t, fresh(t)) })
	t.Run("LedgerTransientBound", func(t *testing.T) { testLedgerTransientBound(t, fresh(t)) })
	t.Run("LedgerReleaseOverdueLeavesBound", func(t *testing.T) { testLedgerReleaseOverdueLeavesBound(t, fresh(t)) })
	t.Run("LedgerReconciledAnswered", func(t *testing.T) { testLedgerReconciledAnswered(t, fresh(t)) })
	t.Run("LedgerBindOrReconcile", func(t *testing.T) { testLedgerBindOrReconcile(t, fresh(t)) })
	t.Run("LedgerRenewHold", func(t *testing.T) { testLedgerRenewHold(t, fresh(t)) })
	t.Run("LedgerSpendable", func(t *testing.T) { testLedgerSpendable(t, fresh(t)) })
}

const unit = 1_000_000

// ledgerNow is the tests' clock: a fixed instant, never the real date.
var ledgerNow = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// checkLedger reads an account's whole ledger and checks that the balance is the sum of its
// entries, that every entry's BalanceAfter is the running sum, that IDs count from 1, and that
// the balance is want (amount and held). It returns the entries.
func checkLedger(t *testing.T, s storage.Store, account string, wantAmount, wantHeld int64) []storage.LedgerEntry {
	t.Helper()
	ctx := context.Background()
	var all []storage.LedgerEntry
	after := ""
	for range 10_000 {
		page, next, err := s.LedgerPage(ctx, account, after, storage.MaxLedgerPage)
		if err != nil {
			t.Fatalf("LedgerPage(%s, %q): %v", account, after, err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		after = next
	}
	var sum int64
	for i, e := range all {
		sum += e.Amount
		if e.ID != fmt.Sprint(i+1) || e.Account != account || e.BalanceAfter != sum {
			t.Fatalf("entry %d = %+v; want id %d, account %s, balance after %d", i, e, i+1, account, sum)
		}
	}
	bal, err := s.Balance(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if bal.Amount != sum {
		t.Fatalf("balance %d is not the sum of the ledger's %d entries, %d", bal.Amount, len(all), sum)
	}
	if bal.Amount != wantAmount || bal.Held != wantHeld {
		t.Fatalf("balance = %+v; want amount %d, held %d", bal, wantAmount, wantHeld)
	}
	return all
}

func mustCredit(t *testing.T, s storage.Store, account string, amount int64, key string) storage.LedgerEntry {
	t.Helper()
	e, err := s.Credit(context.Background(), storage.Credit{Account: account, Amount: amount, IdempotencyKey: key, Note: "test"}, ledgerNow)
	if err != nil {
		t.Fatalf("Credit(%s, %d): %v", account, amount, err)
	}
	return e
}

func mustHold(t *testing.T, s storage.Store, h storage.Hold) (storage.Hold, storage.LedgerEntry) {
	t.Helper()
	if h.Deadline.IsZero() {
		h.Deadline = ledgerNow.Add(storage.DefaultHoldDeadline)
	}
	got, e, err := s.Hold(context.Background(), h, ledgerNow)
	if err != nil {
		t.Fatalf("Hold(%+v): %v", h, err)
	}
	return got, e
}

func testLedgerHoldSettleRelease(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if bal, err := s.Balance(ctx, "acme"); err != nil || bal != (storage.Balance{Account: "acme"}) {
		t.Fatalf("Balance of an account never seen = %+v, %v", bal, err)
	}
	credit := mustCredit(t, s, "acme", 10*unit, "c1")
	if credit.Kind != storage.EntryCredit || credit.Amount != 10*unit || credit.BalanceAfter != 10*unit || credit.Note != "test" {
		t.Fatalf("credit entry = %+v", credit)
	}
	h, e := mustHold(t, s, storage.Hold{ID: "h1", Account: "acme", KeyID: "k1", Model: "veo-3", Ref: "req-1", Amount: 3 * unit})
	if h.State != storage.HoldOpen || !h.Created.Equal(ledgerNow) || h.Amount != 3*unit {
		t.Fatalf("hold = %+v", h)
	}
	if e.Kind != storage.EntryHold || e.Amount != -3*unit || e.BalanceAfter != 7*unit || e.HoldID != "h1" || e.KeyID != "k1" || e.Model != "veo-3" || e.Ref != "req-1" {
		t.Fatalf("hold entry = %+v", e)
	}
	checkLedger(t, s, "acme", 7*unit, 3*unit)
	settled, err := s.Settle(ctx, "h1", 2*unit, ledgerNow.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if settled.Kind != storage.EntrySettle || settled.Amount != unit || settled.Charged != 2*unit || settled.BalanceAfter != 8*unit || settled.Note != "" || settled.Model != "veo-3" {
		t.Fatalf("settle entry = %+v", settled)
	}
	if got, err := s.HoldByID(ctx, "h1"); err != nil || got.State != storage.HoldSettled {
		t.Fatalf("settled hold = %+v, %v", got, err)
	}
	mustHold(t, s, storage.Hold{ID: "h2", Account: "acme", Amount: 4 * unit})
	checkLedger(t, s, "acme", 4*unit, 4*unit)
	released, err := s.Release(ctx, "h2", "upstream refused", ledgerNow)
	if err != nil {
		t.Fatal(err)
	}
	if released.Kind != storage.EntryRelease || released.Amount != 4*unit || released.Note != "upstream refused" {
		t.Fatalf("release entry = %+v", released)
	}
	adjust := mustCredit(t, s, "acme", -unit/2, "c2")
	if adjust.Kind != storage.EntryAdjust || adjust.BalanceAfter != 15*unit/2 {
		t.Fatalf("adjustment entry = %+v", adjust)
	}
	entries := checkLedger(t, s, "acme", 15*unit/2, 0)
	if len(entries) != 6 {
		t.Fatalf("%d entries; want 6", len(entries))
	}
	// Another account's ledger is its own.
	checkLedger(t, s, "other", 0, 0)
}

func testLedgerIdempotent(t *testing.T, s storage.Store) {
	ctx := context.Background()
	first := mustCredit(t, s, "acme", 5*unit, "top-up-1")
	again, err := s.Credit(ctx, storage.Credit{Account: "acme", Amount: 7 * unit, IdempotencyKey: "top-up-1"}, ledgerNow)
	if err != nil || !sameEntry(again, first) {
		t.Fatalf("second credit with the key = %+v, %v; want the first %+v", again, err, first)
	}
	// The key is the account's: another account's credit with it is its own.
	mustCredit(t, s, "other", unit, "top-up-1")
	h, e := mustHold(t, s, storage.Hold{ID: "req-9", Account: "acme", Amount: unit})
	h2, e2, err := s.Hold(ctx, storage.Hold{ID: "req-9", Account: "acme", Amount: 2 * unit, Deadline: ledgerNow.Add(time.Hour)}, ledgerNow)
	if err != nil || !sameEntry(e2, e) || h2.Amount != h.Amount || h2.ID != h.ID {
		t.Fatalf("second hold with the id = %+v, %+v, %v; want the first %+v, %+v", h2, e2, err, h, e)
	}
	checkLedger(t, s, "acme", 4*unit, unit)
	checkLedger(t, s, "other", unit, 0)
	// A settled hold asked again is answered as it stands.
	if _, err := s.Settle(ctx, "req-9", unit, ledgerNow); err != nil {
		t.Fatal(err)
	}
	h3, _, err := s.Hold(ctx, storage.Hold{ID: "req-9", Account: "acme", Amount: unit, Deadline: ledgerNow}, ledgerNow)
	if err != nil || h3.State != storage.HoldSettled {
		t.Fatalf("hold asked again after its settlement = %+v, %v", h3, err)
	}
	checkLedger(t, s, "acme", 4*unit, 0)
}

func testLedgerEndsOnce(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 10*unit, "c")
	mustHold(t, s, storage.Hold{ID: "h", Account: "acme", Amount: 2 * unit})
	if _, err := s.Release(ctx, "h", "failed", ledgerNow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, "h", "failed", ledgerNow); !errors.Is(err, storage.ErrHoldEnded) {
		t.Fatalf("second Release = %v; want ErrHoldEnded", err)
	}
	if _, err := s.Settle(ctx, "h", unit, ledgerNow); !errors.Is(err, storage.ErrHoldEnded) {
		t.Fatalf("Settle after Release = %v; want ErrHoldEnded", err)
	}
	if err := s.BindHold(ctx, "h", "task-1"); !errors.Is(err, storage.ErrHoldEnded) {
		t.Fatalf("BindHold of an ended hold = %v; want ErrHoldEnded", err)
	}
	for _, err := range []error{
		func() error { _, err := s.Settle(ctx, "nope", 0, ledgerNow); return err }(),
		func() error { _, err := s.Release(ctx, "nope", "", ledgerNow); return err }(),
		s.BindHold(ctx, "nope", "t"),
		func() error { _, err := s.HoldByID(ctx, "nope"); return err }(),
	} {
		if !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("an unknown hold = %v; want ErrNotFound", err)
		}
	}
	if _, err := s.Settle(ctx, "h", -1, ledgerNow); err == nil {
		t.Fatal("a negative charge was taken")
	}
	checkLedger(t, s, "acme", 10*unit, 0)
}

func testLedgerInsufficient(t *testing.T, s storage.Store) {
	ctx := context.Background()
	// Unlimited (never credited): metered, every hold fits, the balance goes negative.
	mustHold(t, s, storage.Hold{ID: "u1", Account: "free", Amount: 50 * unit})
	if bal, err := s.Balance(ctx, "free"); err != nil || bal.Limited || bal.Amount != -50*unit {
		t.Fatalf("unlimited account's balance = %+v, %v", bal, err)
	}
	// A credit of 0 makes an account limited.
	mustCredit(t, s, "zero", 0, "declared")
	if _, _, err := s.Hold(ctx, storage.Hold{ID: "z1", Account: "zero", Amount: 1, Deadline: ledgerNow}, ledgerNow); !errors.Is(err, storage.ErrInsufficient) {
		t.Fatalf("hold on a zero balance = %v; want ErrInsufficient", err)
	}
	mustCredit(t, s, "acme", 5*unit, "c")
	mustHold(t, s, storage.Hold{ID: "a1", Account: "acme", Amount: 3 * unit})
	_, _, err := s.Hold(ctx, storage.Hold{ID: "a2", Account: "acme", Amount: 2*unit + 1, Deadline: ledgerNow}, ledgerNow)
	if !errors.Is(err, storage.ErrInsufficient) || errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("hold over the balance = %v; want ErrInsufficient (not the budget's)", err)
	}
	if _, err := s.HoldByID(ctx, "a2"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a refused hold was recorded: %v", err)
	}
	mustHold(t, s, storage.Hold{ID: "a3", Account: "acme", Amount: 2 * unit}) // exactly fits
	checkLedger(t, s, "acme", 0, 5*unit)
	for _, bad := range []storage.Hold{
		{Account: "acme", Amount: 1, Deadline: ledgerNow},
		{ID: "x", Amount: 1, Deadline: ledgerNow},
		{ID: "x", Account: "acme", Amount: -1, Deadline: ledgerNow},
		{ID: "x", Account: "acme", Amount: storage.MaxAmount + 1, Deadline: ledgerNow},
		{ID: "x", Account: "acme", KeyID: "k", Budget: storage.Budget{Limit: 5, Period: "week"}, Deadline: ledgerNow},
		{ID: "x", Account: "acme", Budget: storage.Budget{Limit: 5}, Deadline: ledgerNow},
		{ID: "x", Account: "acme", Amount: 1}, // unbound, without a deadline
	} {
		if _, _, err := s.Hold(ctx, bad, ledgerNow); err == nil || errors.Is(err, storage.ErrInsufficient) {
			t.Fatalf("Hold(%+v) = %v; want a validation error", bad, err)
		}
	}
	if _, err := s.Credit(ctx, storage.Credit{Account: "acme", Amount: unit}, ledgerNow); err == nil {
		t.Fatal("a credit without an idempotency key was taken")
	}
}

func testLedgerOverEstimate(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCredit(t, s, "acme", 10*unit, "c")
	mustHold(t, s, storage.Hold{ID: "long", Account: "acme", Amount: 4 * unit})
	mustHold(t, s, storage.Hold{ID: "short", Account: "acme", Amount: 4 * unit})
	// Came out shorter: the rest returns.
	if e, err := s.Settle(ctx, "short", unit, ledgerNow); err != nil || e.Amount != 3*unit || e.Note != "" {
		t.Fatalf("settling under the hold = %+v, %v", e, err)
	}
	// Came out longer: charged in full, the balance goes below zero, and the entry says so.
	e, err := s.Settle(ctx, "long", 13*unit+unit/2, ledgerNow)
	if err != nil || e.Amount != -9*unit-unit/2 || e.Charged != 13*unit+unit/2 || e.BalanceAfter != -4*unit-unit/2 ||
		e.Note != "charged 9.5 over the hold of 4" {
		t.Fatalf("settling over the hold = %+v, %v", e, err)
	}
	checkLedger(t, s, "acme", -4*unit-unit/2, 0)
	if _, _, err := s.Hold(ctx, storage.Hold{ID: "next", Account: "acme", Amount: 0, Deadline: ledgerNow}, ledgerNow); !errors.Is(err, storage.ErrInsufficient) {
		t.Fatalf("a hold on a negative balance = %v; want ErrInsufficient", err)
	}
	mustCredit(t, s, "acme", 5*unit, "top-up")
	mustHold(t, s, storage.Hold{ID: "next", Account: "acme", Amount: unit / 2})
	checkLedger(t, s, "acme", 0, unit/2)
}

// sameEntry compares entries, their times as instants.
func sameEntry(a, b storage.LedgerEntry) bool {
	same := a.Time.Equal(b.Time)
	a.Time, b.Time = time.Time{}, time.Time{}
	return same && a == b
}
