package accounting

import (
	"context"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// A request's hold (HoldFor) is transient: on Badger it counts against the balance at once,
// while the ledger's Balance and entries show it only once the request ends it, as its hold
// and its settlement together. So is a task's hold (HoldForTask) until its task's create binds
// it (storage's tests cover that); ended before, its two entries are written together too.
func TestRequestHoldsAreTransient(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, id := fundedAccountant(t, &now, 1_000_000)
	ctx := context.Background()
	request, err := a.HoldFor(ctx, id, "veo", "r1", videoEstimate(6), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b := balance(t, a, "acme"); b.Amount != 1_000_000 || b.Held != 0 {
		t.Fatalf("balance with a request's hold open: %+v; want it without the hold", b)
	}
	if h, err := a.Store.HoldByID(ctx, request.ID); err != nil || h.State != storage.HoldOpen || !h.Transient {
		t.Fatalf("the request's hold = %+v, %v; want it open and transient", h, err)
	}
	if _, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(5), time.Minute); status(err) != 402 {
		t.Fatalf("a task's hold past what the request's hold left = %v; want 402", err)
	}
	task, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(4), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b := balance(t, a, "acme"); b.Amount != 1_000_000 || b.Held != 0 {
		t.Fatalf("balance with a task's hold open and unbound: %+v; want it without the hold", b)
	}
	if h, err := a.Store.HoldByID(ctx, task.ID); err != nil || h.State != storage.HoldOpen || !h.Transient {
		t.Fatalf("the task's hold = %+v, %v; want it open and transient", h, err)
	}
	if got := request.Settle(billing.Usage{VideoSeconds: 3}); got != 300_000 {
		t.Fatalf("the request settled at %s, want 0.3", got)
	}
	task.Release("test")
	entries, _, err := a.Store.LedgerPage(ctx, "acme", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind          string
		holdID        string
		amount, after int64
	}{
		{storage.EntryCredit, "", 1_000_000, 1_000_000},
		{storage.EntryHold, request.ID, -600_000, 400_000},
		{storage.EntrySettle, request.ID, 300_000, 700_000},
		{storage.EntryHold, task.ID, -400_000, 300_000},
		{storage.EntryRelease, task.ID, 400_000, 700_000},
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(entries), len(want), entries)
	}
	for i, w := range want {
		if e := entries[i]; e.Kind != w.kind || e.HoldID != w.holdID || e.Amount != w.amount || e.BalanceAfter != w.after {
			t.Errorf("entry %d = %+v; want %+v", i+1, e, w)
		}
	}
}
