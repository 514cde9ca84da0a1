package accounting

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

func newAccountant(t *testing.T) *Accountant {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meter := NewMeter(store, time.Hour, zap.NewNop())
	t.Cleanup(func() { meter.Close(); store.Close() })
	return &Accountant{Store: store, Meter: meter}
}

func status(err error) int {
	var e *apierror.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// TestQuotaIsABudget: the former per-key quota is a budget of that many units for all time,
// on the one money path: holds of a request price of 3 fit a quota of 5 once; a release gives
// the budget back; what is settled is metered as the key's and the account's spend. A quota of
// 0 lets nothing priced through.
func TestQuotaIsABudget(t *testing.T) {
	a := newAccountant(t)
	prices, err := billing.NewTable("USD", []billing.Price{{Model: "m", Request: 3 * billing.Micro}})
	if err != nil {
		t.Fatal(err)
	}
	a.Prices = prices
	ctx := context.Background()
	quota := int64(5)
	id := auth.Identity{KeyID: "k", Account: "acct", Limits: storage.Limits{Quota: &quota}}
	perRequest := func(p *billing.Price) billing.Estimate { return p.EstimateRequest(billing.Request{}) }
	h1, err := a.HoldFor(ctx, id, "m", "r1", perRequest, time.Minute)
	if err != nil || h1.Estimate.Amount != 3*billing.Micro {
		t.Fatalf("hold 3 = %+v, %v", h1, err)
	}
	if _, err := a.HoldFor(ctx, id, "m", "r2", perRequest, time.Minute); status(err) != 402 {
		t.Fatalf("past the quota = %v, want 402", err)
	}
	h1.Release("refused")
	h1.Release("refused") // twice is once
	h2, err := a.HoldFor(ctx, id, "m", "r3", perRequest, time.Minute)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if got := h2.Settle(billing.Usage{}); got != 3*billing.Micro {
		t.Fatalf("settled %v, want 3", got)
	}
	for _, name := range []string{KeyUsage("k", UsageSpent), AccountUsage("acct", UsageSpent)} {
		if v, _ := a.Meter.Value(ctx, name); v != 3*billing.Micro {
			t.Fatalf("%s = %d, want 3 units", name, v)
		}
	}
	zero := int64(0)
	none := auth.Identity{KeyID: "z", Account: "acct", Limits: storage.Limits{Quota: &zero}}
	if _, err := a.HoldFor(ctx, none, "m", "r4", perRequest, time.Minute); status(err) != 402 {
		t.Fatalf("quota 0 = %v, want 402", err)
	}
	if h, err := a.HoldFor(ctx, none, "free", "r5", perRequest, time.Minute); err != nil || h.ID != "" {
		t.Fatalf("quota 0, a model without a price = %+v, %v; want nothing held", h, err)
	}
}

func TestActiveTasksAndFinishing(t *testing.T) {
	a := newAccountant(t)
	ctx := context.Background()
	id := auth.Identity{KeyID: "k", Account: "acct", Limits: storage.Limits{MaxActiveTasks: 1}}
	slot, err := a.StartTask(ctx, id)
	if err != nil || !slot.Held {
		t.Fatalf("first slot = %+v %v", slot, err)
	}
	if _, err := a.StartTask(ctx, id); status(err) != 429 {
		t.Fatalf("second slot = %v", err)
	}
	task := storage.Task{ID: "t", KeyID: "k", Account: "acct", Active: slot.Held}
	if !MarkFinished(&task) || MarkFinished(&task) {
		t.Fatal("MarkFinished must change the record once")
	}
	a.Finished(ctx, task, "failed", billing.Usage{})
	if _, err := a.StartTask(ctx, id); err != nil {
		t.Fatalf("slot not released: %v", err)
	}
}

func TestRateLimitPerKey(t *testing.T) {
	a := newAccountant(t)
	id := auth.Identity{KeyID: "k", Account: "acct", Limits: storage.Limits{RateRequests: 2, RateWindow: time.Minute}}
	for range 2 {
		if err := a.Admit(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	err := a.Admit(context.Background(), id)
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != 429 || e.RetryAfter <= 0 {
		t.Fatalf("third = %v", err)
	}
	if err := a.Admit(context.Background(), auth.Identity{KeyID: "other", Account: "acct", Limits: id.Limits}); err != nil {
		t.Fatalf("another key limited: %v", err)
	}
}

// TestTaskFinishedOnceAcrossCopies: two refreshers hold their own copy of one record and both see
// it finish; only the one whose update stored Finished releases the slot.
func TestTaskFinishedOnceAcrossCopies(t *testing.T) {
	a := newAccountant(t)
	ctx := context.Background()
	id := auth.Identity{KeyID: "k", Account: "acct", Limits: storage.Limits{MaxActiveTasks: 2}}
	s1, _ := a.StartTask(ctx, id)
	s2, _ := a.StartTask(ctx, id)
	if _, err := a.Store.CreateTask(ctx, storage.Task{ID: "t1", Kind: storage.KindVideo, KeyID: "k", Account: "acct", Active: s1.Held, CreatedAt: time.Now().Unix()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won := false
			task, err := storage.UpdateTask(ctx, a.Store, "t1", func(t *storage.Task) error {
				if won = MarkFinished(t); !won {
					return storage.ErrNoChange
				}
				t.Status = "succeeded"
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			if won {
				a.Finished(ctx, task, "succeeded", billing.Usage{})
			}
		}()
	}
	wg.Wait()
	if v, _ := a.Store.Counter(ctx, ActiveCounter("k")); v != 1 || !s2.Held {
		t.Fatalf("active = %d after one task finished twice, want 1", v)
	}
}

func TestActiveTasksMessageAndCountWithoutLimit(t *testing.T) {
	a := newAccountant(t)
	ctx := context.Background()
	one := auth.Identity{KeyID: "one", Account: "acct", Limits: storage.Limits{MaxActiveTasks: 1}}
	if _, err := a.StartTask(ctx, one); err != nil {
		t.Fatal(err)
	}
	_, err := a.StartTask(ctx, one)
	var e *apierror.Error
	if !errors.As(err, &e) || e.Status != 429 || !strings.Contains(e.Message, "already has 1 unfinished task;") {
		t.Fatalf("second task with a limit of 1 = %v", err)
	}
	if got := unfinishedTasks(3); got != "3 unfinished tasks" {
		t.Fatalf("unfinishedTasks(3) = %q", got)
	}

	// Without a limit nothing is refused, and the counter still says how many are active.
	free := auth.Identity{KeyID: "free", Account: "acct"}
	var slots []Slot
	for range 3 {
		s, err := a.StartTask(ctx, free)
		if err != nil || !s.Held {
			t.Fatalf("task without a limit: held=%v err=%v", s.Held, err)
		}
		slots = append(slots, s)
	}
	slots[0].Release()
	// Counted in the store at once, as the durable release in Finished is: nothing waits in the
	// meter for a flush that a crash would lose, which would leave the counter too low for good.
	if v, _ := a.Store.Counter(ctx, ActiveCounter("free")); v != 2 {
		t.Fatalf("active without a limit = %d in the store, want 2", v)
	}
}
