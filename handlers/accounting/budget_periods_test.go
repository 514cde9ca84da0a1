package accounting

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestBudgetPeriodBoundaries: a key budget of 1 per day or per month, on both stores, with
// holds taken a tenth of a second before a UTC period ends (a month's end, a year's end, the end
// of 29 February 2028) and settled after it: the new period starts full (two holds of 0.5 fit,
// a third of 0.3 does not); a hold settled under its estimate gives the rest back to the period
// it was taken in, not to the new one (the 0.3 still does not fit after it; back in the old
// period, 0.3 fits and 0.1 more does not). A month budget across a day's end that is not a
// month's (28 February 2028) does not start again.
func TestBudgetPeriodBoundaries(t *testing.T) {
	stores := bothStores(t)
	ends := []time.Time{
		time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), // a month's end
		time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),  // a year's end
		time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC),  // the end of 29 February
	}
	for name, open := range stores {
		for _, period := range []string{storage.BudgetDay, storage.BudgetMonth} {
			for _, end := range ends {
				t.Run(name+"/"+period+"/"+end.Format(time.DateOnly), func(t *testing.T) {
					budgetAcrossAnEnd(t, open(t), period, end, true)
				})
			}
		}
		t.Run(name+"/month/2028-02-29", func(t *testing.T) {
			budgetAcrossAnEnd(t, open(t), storage.BudgetMonth, time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), false)
		})
	}
}

// budgetAcrossAnEnd runs the story of TestBudgetPeriodBoundaries across the instant end, at
// which the budget's period starts again when starts.
func budgetAcrossAnEnd(t *testing.T, store storage.Store, period string, end time.Time, starts bool) {
	ctx := context.Background()
	clock := testclock.New(end.Add(-100 * time.Millisecond))
	prices, err := billing.NewTable("USD", []billing.Price{{Model: "veo", Second: 100_000}}) // 0.1 a second
	if err != nil {
		t.Fatal(err)
	}
	meter := NewMeter(store, time.Hour, zap.NewNop())
	t.Cleanup(meter.Close)
	a := &Accountant{Store: store, Meter: meter, Prices: prices, Now: clock.Now}
	if _, err := store.Credit(ctx, storage.Credit{Account: "acme", Amount: 100_000_000, IdempotencyKey: "c1"}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	id := auth.Identity{Account: "acme", KeyID: "k1", Limits: storage.Limits{Budget: storage.Budget{Limit: 1_000_000, Period: period}}}
	hold := func(seconds int64) (Hold, error) {
		return a.HoldForTask(ctx, id, "veo", "", videoEstimate(seconds), time.Hour)
	}
	mustHold := func(what string, seconds int64) Hold {
		t.Helper()
		h, err := hold(seconds)
		if err != nil {
			t.Fatalf("%s at %s: %v", what, clock.Now().Format(time.RFC3339Nano), err)
		}
		return h
	}
	refused := func(what string, seconds int64) {
		t.Helper()
		if h, err := hold(seconds); status(err) != 402 {
			t.Fatalf("%s at %s = %+v, %v; want 402 for the budget", what, clock.Now().Format(time.RFC3339Nano), h, err)
		}
	}
	early := mustHold("0.5 before the end", 5)
	late := mustHold("another 0.5 before the end", 5)
	refused("0.1 past the budget before the end", 1)

	clock.Set(end.Add(100 * time.Millisecond))
	if !starts {
		refused("0.1 after a day's end in the same month", 1)
		early.Settle(billing.Usage{VideoSeconds: 2})
		mustHold("0.3 given back in the same month", 3)
		refused("0.1 more", 1)
		return
	}
	mustHold("0.5 in the new period", 5)
	mustHold("another 0.5 in the new period", 5)
	refused("0.3 past the new period's budget", 3)
	// Settled after the end at 2 seconds: 0.2 charged, 0.3 given back to the period it was
	// held in.
	if got := early.Settle(billing.Usage{VideoSeconds: 2}); got != 200_000 {
		t.Fatalf("settled %d; want 0.2", got)
	}
	late.Release("failed")
	refused("0.3 in the new period after the old period's holds ended", 3)

	clock.Set(end.Add(-50 * time.Millisecond)) // the old period again, as a late request sees it
	mustHold("0.8 given back to the old period", 8)
	refused("0.1 more in the old period", 1)
	checkLedgerSums(t, a, "acme", balance(t, a, "acme").Amount)
}
