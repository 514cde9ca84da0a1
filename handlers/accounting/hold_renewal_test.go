package accounting

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// renewCounter counts the renewals that reach the store.
type renewCounter struct {
	storage.Store
	renewals atomic.Int64
}

func (s *renewCounter) RenewHold(ctx context.Context, holdID string, deadline time.Time) error {
	s.renewals.Add(1)
	return s.Store.RenewHold(ctx, holdID, deadline)
}

// TestRequestHoldRenewedWhileItRuns: a request's hold (HoldFor) has its deadline moved on while
// the request runs, so that a request that outlasts its hold's deadline (a long stream) is not
// on the reconciler's list and is settled by its own end; the renewals stop when it ends, or
// when its request's context does. A
// task's hold (HoldForTask) is not renewed: its create binds it well within the deadline.
func TestRequestHoldRenewedWhileItRuns(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(start.UnixNano())
	now := start
	a, id := fundedAccountant(t, &now, 10_000_000)
	a.Now = func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	store := &renewCounter{Store: a.Store}
	a.Store = store
	ctx := context.Background()

	const deadline = 90 * time.Millisecond
	stream, err := a.HoldFor(ctx, id, "veo", "r1", videoEstimate(6), deadline)
	if err != nil {
		t.Fatal(err)
	}
	task, err := a.HoldForTask(ctx, id, "veo", "", videoEstimate(1), deadline)
	if err != nil {
		t.Fatal(err)
	}
	// The request runs a minute by the ledger's clock, and past its first deadline in real time.
	clock.Store(start.Add(time.Minute).UnixNano())
	ran := time.Now()
	for store.renewals.Load() < 2 && time.Since(ran) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	overdue, err := store.OverdueHolds(ctx, start.Add(time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(overdue) != 1 || overdue[0].ID != task.ID {
		t.Fatalf("overdue a minute on = %+v; want only the task's hold (the request's renewed, %d renewals)", overdue, store.renewals.Load())
	}
	if _, err := store.ReleaseOverdue(ctx, stream.ID, "overdue", start.Add(time.Minute)); err == nil {
		t.Fatal("the reconciler released the hold of a request that still runs")
	}
	if got := stream.Settle(billing.Usage{VideoSeconds: 8}); got != 800_000 {
		t.Fatalf("the request that outlasted its first deadline settled at %s; want 0.8", got)
	}
	task.Release("test")
	after := store.renewals.Load()
	time.Sleep(4 * deadline)
	if n := store.renewals.Load(); n > after+1 {
		t.Fatalf("%d renewals after the hold ended; want at most one already under way", n-after)
	}
	// A request whose context ended without ending its hold (a handler that returned early) is
	// no longer renewed: its hold is left to the reconciler at the deadline it has.
	gone, cancel := context.WithCancel(ctx)
	orphan, err := a.HoldFor(gone, id, "veo", "r2", videoEstimate(1), deadline)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	after = store.renewals.Load()
	time.Sleep(4 * deadline)
	if n := store.renewals.Load(); n != after {
		t.Fatalf("%d renewals of a hold whose request's context ended; want none", n-after)
	}
	orphan.Release("test")
	b := balance(t, a, "acme")
	if b.Amount != 9_200_000 || b.Held != 0 {
		t.Fatalf("balance after the settlement = %+v; want 9.2 with nothing held", b)
	}
}

// renewTimes records when each hold's renewals reach the store.
type renewTimes struct {
	storage.Store
	mu    sync.Mutex
	times map[string][]time.Time
}

func (s *renewTimes) RenewHold(ctx context.Context, holdID string, deadline time.Time) error {
	s.mu.Lock()
	s.times[holdID] = append(s.times[holdID], time.Now())
	s.mu.Unlock()
	return s.Store.RenewHold(ctx, holdID, deadline)
}

func (s *renewTimes) first(holdID string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.times[holdID]) == 0 {
		return time.Time{}, false
	}
	return s.times[holdID][0], true
}

// TestShortHoldRenewedWhileALongerOneRuns: a hold is renewed within its own deadline also when
// a hold with a much longer deadline was listed first (the renewer then sleeps the longer one's
// tick): HoldFor's promise, every third of the deadline, does not depend on the other requests.
// Before, the renewer slept out the longer tick (2.5 s here), past the short hold's deadline.
func TestShortHoldRenewedWhileALongerOneRuns(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, id := fundedAccountant(t, &now, 10_000_000)
	store := &renewTimes{Store: a.Store, times: map[string][]time.Time{}}
	a.Store = store
	ctx := context.Background()
	long, err := a.HoldFor(ctx, id, "veo", "long", videoEstimate(1), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Release("test")
	time.Sleep(20 * time.Millisecond) // the renewer sleeps its tick
	const deadline = 600 * time.Millisecond
	listed := time.Now()
	short, err := a.HoldFor(ctx, id, "veo", "short", videoEstimate(1), deadline)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Release("test")
	var renewed time.Time
	for ok := false; !ok && time.Since(listed) < 5*time.Second; {
		time.Sleep(10 * time.Millisecond)
		renewed, ok = store.first(short.ID)
	}
	if renewed.IsZero() || renewed.Sub(listed) >= deadline {
		t.Fatalf("the short hold's first renewal came %v after it was taken (zero: none in 5 s); want within its deadline %v", renewed.Sub(listed), deadline)
	}
}
