package accounting

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// pricedAccountant is an Accountant on a real Badger store whose model "veo" costs 0.10 per
// second (a 5-second task holds 0.5), at the instant *clock.
func pricedAccountant(t *testing.T, clock *time.Time) *Accountant {
	a := newAccountant(t)
	prices, err := billing.NewTable("USD", []billing.Price{{Model: "veo", Second: 100_000}})
	if err != nil {
		t.Fatal(err)
	}
	a.Prices, a.Now = prices, func() time.Time { return *clock }
	return a
}

// fundedAccountant is pricedAccountant with credit micro-units credited to the account acme at
// now, and the identity of acme's key k1 (no limits).
func fundedAccountant(t *testing.T, now *time.Time, credit int64) (*Accountant, auth.Identity) {
	t.Helper()
	a := pricedAccountant(t, now)
	if _, err := a.Store.Credit(context.Background(), storage.Credit{Account: "acme", Amount: credit, IdempotencyKey: "c1"}, *now); err != nil {
		t.Fatal(err)
	}
	return a, auth.Identity{Account: "acme", KeyID: "k1"}
}

func videoEstimate(seconds int64) func(*billing.Price) billing.Estimate {
	return func(p *billing.Price) billing.Estimate { return p.EstimateVideo(billing.VideoTask{Duration: &seconds}) }
}

func balance(t *testing.T, a *Accountant, account string) storage.Balance {
	t.Helper()
	b, err := a.Store.Balance(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHoldsAgainstTheBalance: holds fit the credited balance and no more (402 in the
// endpoint's error); a release gives the hold back; a settlement charges what was used, more or
// less than the estimate; each hold ends once however many callers race to end it.
func TestHoldsAgainstTheBalance(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, id := fundedAccountant(t, &now, 1_000_000)
	ctx := context.Background()
	h1, err := a.HoldForTask(ctx, id, "veo", "r1", videoEstimate(5), time.Minute)
	if err != nil || h1.ID == "" || h1.Estimate.Amount != 500_000 {
		t.Fatalf("first hold = %+v, %v", h1, err)
	}
	h2, err := a.HoldForTask(ctx, id, "veo", "r2", videoEstimate(5), time.Minute)
	if err != nil {
		t.Fatalf("second hold: %v", err)
	}
	_, err = a.HoldForTask(ctx, id, "veo", "r3", videoEstimate(5), time.Minute)
	if e, ok := err.(*apierror.Error); !ok || e.Status != 402 || !strings.Contains(e.Message, "balance") {
		t.Fatalf("a third hold = %v, want 402 for the balance", err)
	}
	if free, err := a.HoldForTask(ctx, id, "unpriced", "r4", videoEstimate(5), time.Minute); err != nil || free.ID != "" {
		t.Fatalf("a model without a price = %+v, %v; want nothing held", free, err)
	}

	h2.Release("refused by the upstream")
	h2.Release("twice")
	// h2's hold and release are written together; h1, transient until its task binds it or it
	// ends, shows in neither the balance nor held yet (it counted against the third hold).
	if b := balance(t, a, "acme"); b.Amount != 1_000_000 || b.Held != 0 {
		t.Fatalf("after a release: %+v, want 1 and nothing held", b)
	}
	// Longer than estimated: 8 s at 0.10 = 0.8 charged for a hold of 0.5.
	amounts := race(8, func() billing.Money { return h1.Settle(billing.Usage{VideoSeconds: 8}) })
	charged := 0
	for _, m := range amounts {
		if m != 0 {
			charged++
			if m != 800_000 {
				t.Fatalf("settled at %s, want 0.8", m)
			}
		}
	}
	if charged != 1 {
		t.Fatalf("%d of 8 racing settlements charged, want 1", charged)
	}
	if b := balance(t, a, "acme"); b.Amount != 200_000 || b.Held != 0 {
		t.Fatalf("after settling 0.8: %+v, want 0.2 and nothing held", b)
	}
	// Shorter than estimated: a 5 s hold (0.5 does not fit 0.2) → 402; a 2 s one fits and settles at 1 s.
	if _, err := a.HoldForTask(ctx, id, "veo", "r5", videoEstimate(5), time.Minute); err == nil {
		t.Fatal("a hold of 0.5 fit a balance of 0.2")
	}
	h3, err := a.HoldForTask(ctx, id, "veo", "r6", videoEstimate(2), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := h3.Settle(billing.Usage{VideoSeconds: 1}); got != 100_000 {
		t.Fatalf("settled at %s, want 0.1", got)
	}
	checkLedgerSums(t, a, "acme", 100_000)
}

// TestTaskHoldsEndOnce: the finish of a task settles its hold from the reported usage when it
// succeeded and releases it otherwise; finishing twice (the watcher and a client query) ends it
// once.
func TestTaskHoldsEndOnce(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, id := fundedAccountant(t, &now, 3_000_000)
	ctx := context.Background()
	for i, status := range []string{"succeeded", "failed", "cancelled", "expired"} {
		h, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(5), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		taskID := "cgt-" + status
		a.BindTask(ctx, h.ID, taskID)
		task := storage.Task{ID: taskID, Account: "acme", KeyID: "k1", Model: "veo", HoldID: h.ID,
			HoldAmount: int64(h.Estimate.Amount), HoldUsage: h.Estimate.Usage.Encode()}
		amounts := race(4, func() billing.Money { return a.SettleTask(ctx, task, status, billing.Usage{VideoSeconds: 3}) })
		total := billing.Money(0)
		for _, m := range amounts {
			total += m
		}
		if want := map[bool]billing.Money{true: 300_000, false: 0}[i == 0]; total != want {
			t.Fatalf("%s: charged %s in all, want %s", status, total, want)
		}
	}
	// 3 - 0.3 (the succeeded task's 3 s); the other three released in full.
	if b := balance(t, a, "acme"); b.Amount != 2_700_000 || b.Held != 0 {
		t.Fatalf("balance %+v, want 2.7 and nothing held", b)
	}
	checkLedgerSums(t, a, "acme", 2_700_000)

	// A succeeded task whose answer reports a length no video can be (2^63-1 seconds: an
	// upstream's nonsense, which would price past the ledger's bound) is charged its estimate
	// (billing.Price.Possible), and its hold ends.
	h, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(5), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a.BindTask(ctx, h.ID, "cgt-long")
	task := storage.Task{ID: "cgt-long", Account: "acme", KeyID: "k1", Model: "veo", HoldID: h.ID,
		HoldAmount: int64(h.Estimate.Amount), HoldUsage: h.Estimate.Usage.Encode()}
	if got := a.SettleTask(ctx, task, "succeeded", billing.Usage{VideoSeconds: math.MaxInt64}); got != 500_000 {
		t.Fatalf("a task reporting 2^63-1 seconds was charged %s, want its estimate 0.5", got)
	}
	if b := balance(t, a, "acme"); b.Amount != 2_200_000 || b.Held != 0 {
		t.Fatalf("after it: %+v, want 2.2 and nothing held", b)
	}
	checkLedgerSums(t, a, "acme", 2_200_000)
}

// TestKeyDayBudgetResetsAtUTCMidnight: a key's day budget refuses a hold past it until 00:00
// UTC, on the injected clock.
func TestKeyDayBudgetResetsAtUTCMidnight(t *testing.T) {
	now := time.Date(2026, 11, 26, 23, 59, 0, 0, time.UTC)
	a := pricedAccountant(t, &now)
	ctx := context.Background()
	id := auth.Identity{Account: "acme", KeyID: "k1", Limits: storage.Limits{Budget: storage.Budget{Limit: 1_000_000, Period: storage.BudgetDay}}}
	for range 2 {
		h, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(5), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		h.Settle(billing.Usage{})
	}
	_, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(5), time.Minute)
	if e, ok := err.(*apierror.Error); !ok || e.Status != 402 || !strings.Contains(e.Message, "budget") {
		t.Fatalf("past the day's budget at 23:59 = %v, want 402 for the budget", err)
	}
	now = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	if _, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(5), time.Minute); err != nil {
		t.Fatalf("at 00:00 UTC the next day: %v", err)
	}
}

// race runs end n times at once and returns what each call charged.
func race(n int, end func() billing.Money) []billing.Money {
	amounts := make([]billing.Money, n)
	var wg sync.WaitGroup
	for i := range amounts {
		wg.Go(func() { amounts[i] = end() })
	}
	wg.Wait()
	return amounts
}

// checkLedgerSums checks that the account's entries sum to its balance, which is want.
func checkLedgerSums(t *testing.T, a *Accountant, account string, want int64) {
	t.Helper()
	sum, after := int64(0), ""
	for {
		entries, next, err := a.Store.LedgerPage(context.Background(), account, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			sum += e.Amount
		}
		if next == "" {
			break
		}
		after = next
	}
	if b := balance(t, a, account); sum != b.Amount || sum != want {
		t.Fatalf("the ledger sums to %d, the balance is %d; want both %d", sum, b.Amount, want)
	}
}

// TestHoldCallsHoldsTheSum: the calls of one request are held in one hold at the sum of each
// call's estimate at its own model's price (an unpriced model adds nothing); a sum past the
// balance is a 402 although each call fits; the hold settles at the amount held whatever usage
// the answer reports, and a release gives it all back.
func TestHoldCallsHoldsTheSum(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a := newAccountant(t)
	prices, err := billing.NewTable("USD", []billing.Price{
		{Model: "cheap", InputTokens: 1_000_000_000, OutputTokens: 1_000_000_000},
		{Model: "dear", InputTokens: 1_000_000_000, OutputTokens: 2_000_000_000},
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Prices, a.Now = prices, func() time.Time { return now }
	ctx := context.Background()
	if _, err := a.Store.Credit(ctx, storage.Credit{Account: "acme", Amount: 1_000_000, IdempotencyKey: "c1"}, now); err != nil {
		t.Fatal(err)
	}
	id := auth.Identity{Account: "acme", KeyID: "k1"}
	// 40 bytes: 10 input tokens at 0.001, plus 100 output tokens at 0.001 or 0.002.
	call := func(model string) Call {
		return Call{Model: model, Request: billing.Request{BodyBytes: 40, MaxOutput: 100}}
	}
	h, err := a.HoldCalls(ctx, id, "cheap", "r1", []Call{call("cheap"), call("dear"), call("unpriced")}, time.Minute)
	if err != nil || h.Estimate.Amount != 110_000+210_000 {
		t.Fatalf("hold = %+v, %v; want 0.32", h, err)
	}
	if got := h.Settle(billing.Usage{InputTokens: 1, OutputTokens: 1}); got != 320_000 {
		t.Fatalf("settled at %s, want the 0.32 held", got)
	}
	if b := balance(t, a, "acme"); b.Amount != 680_000 || b.Held != 0 {
		t.Fatalf("after the settlement: %+v", b)
	}
	if free, err := a.HoldCalls(ctx, id, "x", "r2", []Call{call("unpriced")}, time.Minute); err != nil || free.ID != "" {
		t.Fatalf("calls without a price = %+v, %v; want nothing held", free, err)
	}
	// 0.68 left: three dear calls (0.63) fit, four (0.84) do not though each does.
	four := []Call{call("dear"), call("dear"), call("dear"), call("dear")}
	if _, err := a.HoldCalls(ctx, id, "dear", "r3", four, time.Minute); !isStatus(err, 402) {
		t.Fatalf("four calls past the balance = %v, want 402", err)
	}
	h, err = a.HoldCalls(ctx, id, "dear", "r4", four[:3], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.Release("refused by the upstream")
	if b := balance(t, a, "acme"); b.Amount != 680_000 || b.Held != 0 {
		t.Fatalf("after the release: %+v", b)
	}
	// Calls whose estimates each saturate (max_tokens past any price) sum past the ledger's
	// bound, not to a wrapped negative amount that the store refuses (a 500): a 402, on a
	// limited account and an unlimited one alike.
	huge := Call{Model: "dear", Request: billing.Request{BodyBytes: 40, MaxOutput: math.MaxInt64}}
	for _, who := range []auth.Identity{id, {Account: "unlimited", KeyID: "k2"}} {
		if _, err := a.HoldCalls(ctx, who, "dear", "r5", []Call{huge, huge, huge}, time.Minute); !isStatus(err, 402) {
			t.Fatalf("calls past the ledger's bound for %s = %v, want 402", who.Account, err)
		}
	}
}

// isStatus reports whether err is an *apierror.Error of status.
func isStatus(err error, status int) bool {
	e, ok := err.(*apierror.Error)
	return ok && e.Status == status
}

// TestHoldEndLogsWhatItWasFor: ending a hold the ledger does not know is logged with the hold,
// the account and the model, and for a task's hold with the task too; nothing is charged or
// metered.
func TestHoldEndLogsWhatItWasFor(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, id := fundedAccountant(t, &now, 1_000_000)
	core, logs := observer.New(zap.ErrorLevel)
	a.Logger = zap.New(core)
	h, err := a.HoldFor(context.Background(), id, "veo", "r1", videoEstimate(5), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h.ID = "hold_unknown" // the ledger has no such hold
	if got := h.Settle(billing.Usage{}); got != 0 {
		t.Errorf("settling an unknown hold charged %d", got)
	}
	task := storage.Task{ID: "cgt-1", Account: "acme", KeyID: "k1", Model: "veo", HoldID: "hold_unknown_2", HoldAmount: 500_000}
	if got := a.SettleTask(context.Background(), task, "succeeded", billing.Usage{}); got != 0 {
		t.Errorf("settling a task's unknown hold charged %d", got)
	}
	entries := logs.FilterMessage("ending a hold the ledger does not know").All()
	if len(entries) != 2 {
		t.Fatalf("%d log lines about unknown holds, want 2: %v", len(entries), logs.All())
	}
	want := []map[string]any{
		{"hold_id": "hold_unknown", "account": "acme", "model": "veo"},
		{"hold_id": "hold_unknown_2", "account": "acme", "model": "veo", "task_id": "cgt-1"},
	}
	for i, e := range entries {
		fields := e.ContextMap()
		if len(fields) != len(want[i]) {
			t.Errorf("line %d has fields %v, want %v", i, fields, want[i])
		}
		for k, v := range want[i] {
			if fields[k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, fields[k], v)
			}
		}
	}
	if v, err := a.Meter.Value(context.Background(), KeyUsage("k1", UsageSpent)); err != nil || v != 0 {
		t.Errorf("spend metered for unknown holds: %d, %v", v, err)
	}
}
