package accounting

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TestNothingHeldWhileOverdrawn: a request that holds nothing (a model without a price, a batch
// of such calls, a count: Spendable) is refused with 402 while the key's budget for the day was
// charged past its limit, or the account's balance is below zero; the next day's budget, or a
// top-up to zero, lets it through again.
func TestNothingHeldWhileOverdrawn(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, id := fundedAccountant(t, &now, 1_000_000)
	id.Limits = storage.Limits{Budget: storage.Budget{Limit: 400_000, Period: storage.BudgetDay}}
	ctx := context.Background()
	free := func() error {
		_, err := a.HoldFor(ctx, id, "unpriced", "", func(*billing.Price) billing.Estimate { return billing.Estimate{} }, time.Minute)
		return err
	}
	refused := func(what, says string, err error) {
		t.Helper()
		if e, ok := err.(*apierror.Error); !ok || e.Status != 402 || e.Code != "insufficient_quota" || !strings.Contains(e.Message, says) {
			t.Fatalf("%s = %v; want 402 insufficient_quota saying %q", what, err, says)
		}
	}
	if err := free(); err != nil {
		t.Fatalf("a free request of a funded key: %v", err)
	}
	// 0.4 held for a 4-second task, charged 0.6 for 6 seconds: past the key's day budget of
	// 0.4, and the balance at 0.4.
	h, err := a.HoldFor(ctx, id, "veo", "", videoEstimate(4), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	seconds := int64(6)
	h.Settle(billing.Usage{VideoSeconds: seconds})
	refused("a free request past the key's budget", "budget", free())
	_, err = a.HoldCalls(ctx, id, "batch", "", []Call{{Model: "unpriced"}}, time.Minute)
	refused("a batch of free calls past the key's budget", "budget", err)
	refused("a count past the key's budget", "budget", a.Spendable(ctx, id))
	now = now.Add(24 * time.Hour)
	if err := free(); err != nil {
		t.Fatalf("the next day: %v", err)
	}
	// Another 0.4 held and 0.6 charged: the balance is -0.2.
	h, err = a.HoldFor(ctx, id, "veo", "", videoEstimate(4), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.Settle(billing.Usage{VideoSeconds: seconds})
	id.Limits = storage.Limits{}
	refused("a free request of an overdrawn account", "below zero", free())
	if _, err := a.Store.Credit(ctx, storage.Credit{Account: "acme", Amount: 200_000, IdempotencyKey: "c2"}, now); err != nil {
		t.Fatal(err)
	}
	if err := free(); err != nil {
		t.Fatalf("topped up to zero: %v", err)
	}
}
