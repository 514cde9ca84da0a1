package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerBudgetDay: a key's daily budget is spent by holds and given back by what their
// settlements do not charge, and starts again at 00:00 UTC, whatever zone the clock is in.
func testLedgerBudgetDay(t *testing.T, s storage.Store) {
	ctx := context.Background()
	daily := storage.Budget{Limit: 5 * unit, Period: storage.BudgetDay}
	late := time.Date(2026, 3, 14, 23, 59, 59, 0, time.UTC)
	hold := func(id string, amount int64, now time.Time) error {
		_, _, err := s.Hold(ctx, storage.Hold{ID: id, Account: "acme", KeyID: "k1", Amount: amount, Budget: daily, Deadline: now.Add(time.Hour)}, now)
		return err
	}
	if err := hold("d1", 3*unit, late); err != nil {
		t.Fatal(err)
	}
	err := hold("d2", 3*unit, late)
	if !errors.Is(err, storage.ErrBudgetExceeded) || !errors.Is(err, storage.ErrInsufficient) {
		t.Fatalf("a hold over the day's budget = %v; want ErrBudgetExceeded", err)
	}
	// Another key of the account has its own budget.
	if _, _, err := s.Hold(ctx, storage.Hold{ID: "other-key", Account: "acme", KeyID: "k2", Amount: 4 * unit, Budget: daily, Deadline: late}, late); err != nil {
		t.Fatal(err)
	}
	// The settlement charges 1 of the 3 held: 2 return to the day's budget.
	if _, err := s.Settle(ctx, "d1", unit, late); err != nil {
		t.Fatal(err)
	}
	if err := hold("d3", 4*unit, late); err != nil {
		t.Fatalf("a hold that fits after the settlement gave back: %v", err)
	}
	if err := hold("d4", 1, late); !errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("the day's budget is spent; hold = %v", err)
	}
	// 00:00 UTC the next day, read on a clock in UTC+8 (08:00 there): a new budget.
	midnight := time.Date(2026, 3, 15, 8, 0, 0, 0, time.FixedZone("UTC+8", 8*3600))
	if err := hold("d5", 5*unit, midnight); err != nil {
		t.Fatalf("a hold at UTC midnight: %v", err)
	}
	if err := hold("d6", 1, midnight); !errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("the new day's budget is spent; hold = %v", err)
	}
	// Releasing yesterday's hold gives back to yesterday's budget, not today's.
	if _, err := s.Release(ctx, "d3", "failed", midnight); err != nil {
		t.Fatal(err)
	}
	if err := hold("d7", 1, midnight); !errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("yesterday's release gave to today's budget: hold = %v", err)
	}
	if err := hold("d8", 4*unit, late); err != nil {
		t.Fatalf("yesterday's release did not give back to yesterday's budget: %v", err)
	}
}

// testLedgerBudgetMonth: a monthly budget runs from the first of the month, 00:00 UTC; a budget
// without a period never starts again.
func testLedgerBudgetMonth(t *testing.T, s storage.Store) {
	ctx := context.Background()
	hold := func(id, key string, b storage.Budget, amount int64, now time.Time) error {
		_, _, err := s.Hold(ctx, storage.Hold{ID: id, Account: "acme", KeyID: key, Amount: amount, Budget: b, Deadline: now}, now)
		return err
	}
	monthly := storage.Budget{Limit: 10 * unit, Period: storage.BudgetMonth}
	endOfFeb := time.Date(2028, 2, 29, 23, 59, 59, 999_000_000, time.UTC) // a leap year
	for i, at := range []time.Time{time.Date(2028, 2, 1, 0, 0, 0, 0, time.UTC), endOfFeb} {
		if err := hold(fmt.Sprint("m", i), "k", monthly, 5*unit, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := hold("m2", "k", monthly, 1, endOfFeb); !errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("February's budget is spent; hold = %v", err)
	}
	if err := hold("m3", "k", monthly, 10*unit, time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("a hold on the first of March: %v", err)
	}
	total := storage.Budget{Limit: 3 * unit}
	if err := hold("t1", "k-total", total, 3*unit, endOfFeb); err != nil {
		t.Fatal(err)
	}
	if err := hold("t2", "k-total", total, 1, endOfFeb.AddDate(1, 0, 0)); !errors.Is(err, storage.ErrBudgetExceeded) {
		t.Fatalf("a budget without a period started again: hold = %v", err)
	}
}

// testLedgerOverdueAndBind: the open, unbound holds past their deadline are listed, earliest
// first; bound and ended ones are not.
func testLedgerOverdueAndBind(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for i, minutes := range []int{30, 10, 20, 40, 50} {
		mustHold(t, s, storage.Hold{ID: fmt.Sprint("o", i), Account: "acme", Amount: unit, Deadline: ledgerNow.Add(time.Duration(minutes) * time.Minute)})
	}
	mustHold(t, s, storage.Hold{ID: "born-bound", Account: "acme", Amount: unit, Bound: true, Deadline: ledgerNow})
	if err := s.BindHold(ctx, "o2", "task-2"); err != nil {
		t.Fatal(err)
	}
	if err := s.BindHold(ctx, "o2", "task-2"); err != nil {
		t.Fatalf("binding again to the same task: %v", err)
	}
	if err := s.BindHold(ctx, "o2", "task-x"); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("binding to another task = %v; want ErrConflict", err)
	}
	if h, err := s.HoldByID(ctx, "o2"); err != nil || !h.Bound || h.Ref != "task-2" {
		t.Fatalf("bound hold = %+v, %v", h, err)
	}
	if _, err := s.Release(ctx, "o3", "done", ledgerNow); err != nil {
		t.Fatal(err)
	}
	ids := func(now time.Time, limit int) []string {
		t.Helper()
		holds, err := s.OverdueHolds(ctx, now, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range holds {
			if h.State != storage.HoldOpen || h.Bound {
				t.Fatalf("overdue hold %+v is not open and unbound", h)
			}
			out = append(out, h.ID)
		}
		return out
	}
	for _, tc := range []struct {
		now   time.Time
		limit int
		want  string
	}{
		{ledgerNow.Add(10 * time.Minute), 10, "[]"}, // a deadline equal to now is not before it
		{ledgerNow.Add(35 * time.Minute), 10, "[o1 o0]"},
		{ledgerNow.Add(time.Hour), 10, "[o1 o0 o4]"},
		{ledgerNow.Add(time.Hour), 2, "[o1 o0]"},
	} {
		if got := fmt.Sprint(ids(tc.now, tc.limit)); got != tc.want {
			t.Errorf("OverdueHolds(+%s, %d) = %s; want %s", tc.now.Sub(ledgerNow), tc.limit, got, tc.want)
		}
	}
	if _, err := s.Settle(ctx, "o1", unit, ledgerNow); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ids(ledgerNow.Add(time.Hour), 10)); got != "[o0 o4]" {
		t.Errorf("after o1 settled, OverdueHolds = %s; want [o0 o4]", got)
	}
}

// testLedgerPages: the ledger is read in pages in order, and the cursor of the last page is "".
func testLedgerPages(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for i := range 25 {
		mustCredit(t, s, "acme", int64(i+1), fmt.Sprint("c", i))
	}
	after := ""
	var sizes []int
	for range 10 {
		page, next, err := s.LedgerPage(ctx, "acme", after, 10)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page))
		for i, e := range page {
			if want := int64(len(sizes)-1)*10 + int64(i) + 1; e.Amount != want {
				t.Fatalf("page %d entry %d amount %d; want %d", len(sizes), i, e.Amount, want)
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if fmt.Sprint(sizes) != "[10 10 5]" {
		t.Fatalf("page sizes %v; want [10 10 5]", sizes)
	}
	if page, next, err := s.LedgerPage(ctx, "acme", "", 0); err != nil || len(page) != 25 || next != "" {
		t.Fatalf("a page of the default size = %d entries, %q, %v", len(page), next, err)
	}
	if page, next, err := s.LedgerPage(ctx, "acme", "25", 10); err != nil || len(page) != 0 || next != "" {
		t.Fatalf("the page after the last entry = %d entries, %q, %v", len(page), next, err)
	}
	if _, _, err := s.LedgerPage(ctx, "acme", "x'; --", 10); err == nil {
		t.Fatal("a bad cursor was taken")
	}
	checkLedger(t, s, "acme", 325, 0)

	// Newest first: 25..16, 15..6, 5..1, each page's cursor its last (oldest) entry.
	before, sizes := "", nil
	var amounts []int64
	for range 10 {
		page, next, err := s.LedgerPageNewest(ctx, "acme", before, 10)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page))
		for _, e := range page {
			amounts = append(amounts, e.Amount)
		}
		if next == "" {
			break
		}
		before = next
	}
	if fmt.Sprint(sizes) != "[10 10 5]" || len(amounts) != 25 || amounts[0] != 25 || amounts[24] != 1 || !slices.IsSortedFunc(amounts, func(a, b int64) int { return int(b - a) }) {
		t.Fatalf("newest first: page sizes %v, amounts %v; want [10 10 5], 25 down to 1", sizes, amounts)
	}
	if page, next, err := s.LedgerPageNewest(ctx, "acme", "1", 10); err != nil || len(page) != 0 || next != "" {
		t.Fatalf("the page before the first entry = %d entries, %q, %v", len(page), next, err)
	}
	if _, _, err := s.LedgerPageNewest(ctx, "acme", "x'; --", 10); err == nil {
		t.Fatal("a bad newest-first cursor was taken")
	}
}
