package accounting

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TestTaskSettlesAtItsAcceptedPrice: a task is charged at the price its hold was taken at
// (storage.Task.HoldPrice), whatever the price table says when it finishes: a price raised or
// removed meanwhile changes nothing. A record without that price settles at the table's; one
// whose price does not decode is charged the amount held, and logged.
func TestTaskSettlesAtItsAcceptedPrice(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, id := fundedAccountant(t, &now, 10_000_000) // veo at 0.10 a second
	ctx := context.Background()
	accepted := func(taskID string) storage.Task {
		t.Helper()
		h, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(5), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		a.BindTask(ctx, h.ID, taskID)
		return storage.Task{ID: taskID, Account: "acme", KeyID: "k1", Model: "veo", HoldID: h.ID,
			HoldAmount: int64(h.Estimate.Amount), HoldUsage: h.Estimate.Usage.Encode(), HoldPrice: h.EncodedPrice()}
	}
	reload := func(prices ...billing.Price) {
		t.Helper()
		table, err := billing.NewTable("USD", prices)
		if err != nil {
			t.Fatal(err)
		}
		a.Prices = table
	}

	raised, removed, legacy, garbled := accepted("cgt-raised"), accepted("cgt-removed"), accepted("cgt-legacy"), accepted("cgt-garbled")
	if raised.HoldPrice != "s=0.1" {
		t.Fatalf("the record keeps the price %q, want s=0.1", raised.HoldPrice)
	}
	legacy.HoldPrice = ""
	garbled.HoldPrice = "s=0.1,s=9"
	core, logs := observer.New(zap.ErrorLevel)
	a.Logger = zap.New(core)

	reload(billing.Price{Model: "veo", Second: 600_000}) // 0.60 a second
	if got := a.SettleTask(ctx, raised, "succeeded", billing.Usage{VideoSeconds: 3}); got != 300_000 {
		t.Errorf("a task accepted at 0.10 a second, settled after the price went to 0.60, was charged %s for 3 s, want 0.3", got)
	}
	if got := a.SettleTask(ctx, legacy, "succeeded", billing.Usage{VideoSeconds: 3}); got != 1_800_000 {
		t.Errorf("a record without its price was charged %s for 3 s, want the table's 1.8", got)
	}
	if got := a.SettleTask(ctx, garbled, "succeeded", billing.Usage{VideoSeconds: 3}); got != 500_000 || logs.Len() != 1 {
		t.Errorf("a record whose price does not decode was charged %s (%d lines logged), want the 0.5 held and one line", got, logs.Len())
	}
	reload(billing.Price{Model: "other", Second: 1})
	if got := a.SettleTask(ctx, removed, "succeeded", billing.Usage{VideoSeconds: 4}); got != 400_000 {
		t.Errorf("a task whose model lost its price meanwhile was charged %s for 4 s, want 0.4 at its accepted price", got)
	}
	checkLedgerSums(t, a, "acme", 10_000_000-300_000-1_800_000-500_000-400_000)
}
