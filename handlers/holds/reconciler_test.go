package holds

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

var start = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

func openBadger(t *testing.T) storage.Store {
	t.Helper()
	s, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	return closedAtEnd(t, s, err)
}

// closedAtEnd fails the test on err, or closes s when the test ends.
func closedAtEnd(t *testing.T, s storage.Store, err error) storage.Store {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// takeHolds credits the account and takes n holds due at start+1m, one bound hold and one due
// later.
func takeHolds(t *testing.T, s storage.Store, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Credit(ctx, storage.Credit{Account: "acme", Amount: 1_000_000_000, IdempotencyKey: "c"}, start); err != nil {
		t.Fatal(err)
	}
	hold := func(id string, deadline time.Time, bound bool) {
		if _, _, err := s.Hold(ctx, storage.Hold{ID: id, Account: "acme", Amount: 1_000_000, Deadline: deadline, Bound: bound}, start); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		hold(fmt.Sprint("h", i), start.Add(time.Minute), false)
	}
	hold("bound", start.Add(time.Minute), true)
	hold("later", start.Add(time.Hour), false)
}

// Two instances reconcile one store at once, with a clock past the deadlines: every overdue
// hold is released exactly once, by the instance holding the lease; the bound hold and the one
// not yet due stay open.
func TestReconcilersReleaseEachOverdueHoldOnce(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (storage.Store, storage.Store){
		"badger": func(t *testing.T) (storage.Store, storage.Store) { s := openBadger(t); return s, s },
		"redis":  openRedisPair,
	} {
		t.Run(name, func(t *testing.T) {
			a, b := open(t)
			const n = 250 // more than one batch
			takeHolds(t, a, n)
			clock := func() time.Time { return start.Add(2 * time.Minute) }
			var mu sync.Mutex
			releases := map[string]int{}
			count := func(h storage.Hold, _ storage.LedgerEntry) { mu.Lock(); releases[h.ID]++; mu.Unlock() }
			ra := &Reconciler{Ledger: a, Leases: a, Owner: "a", Interval: time.Second, Now: clock, Released: count}
			rb := &Reconciler{Ledger: b, Leases: b, Owner: "b", Interval: time.Second, Now: clock, Released: count}
			var wg sync.WaitGroup
			var na, nb int
			var ea, eb error
			wg.Go(func() { na, ea = ra.Pass(context.Background()) })
			wg.Go(func() { nb, eb = rb.Pass(context.Background()) })
			wg.Wait()
			if ea != nil || eb != nil {
				t.Fatal(ea, eb)
			}
			if na+nb != n || na != 0 && nb != 0 {
				t.Fatalf("released %d and %d; want %d by the lease holder alone", na, nb, n)
			}
			for i := range n {
				if got := releases[fmt.Sprint("h", i)]; got != 1 {
					t.Fatalf("hold h%d released %d times", i, got)
				}
			}
			for _, id := range []string{"bound", "later"} {
				if h, err := a.HoldByID(context.Background(), id); err != nil || h.State != storage.HoldOpen {
					t.Fatalf("hold %s = %+v, %v; want it open", id, h, err)
				}
			}
			bal, err := b.Balance(context.Background(), "acme")
			if err != nil || bal.Held != 2_000_000 || bal.Amount != 1_000_000_000-2_000_000 {
				t.Fatalf("balance after reconciling = %+v, %v", bal, err)
			}
			// Another pass finds nothing more.
			if again, err := ra.Pass(context.Background()); err != nil || again != 0 {
				t.Fatalf("second pass released %d, %v", again, err)
			}
		})
	}
}

// Before its deadline a hold is left alone; after it, the next pass releases it.
func TestReconcilerWaitsForTheDeadline(t *testing.T) {
	s := openBadger(t)
	takeHolds(t, s, 3)
	now := start.Add(30 * time.Second)
	r := &Reconciler{Ledger: s, Leases: s, Interval: time.Second, Now: func() time.Time { return now }}
	if n, err := r.Pass(context.Background()); err != nil || n != 0 {
		t.Fatalf("a pass before the deadline released %d, %v", n, err)
	}
	now = start.Add(61 * time.Second)
	if n, err := r.Pass(context.Background()); err != nil || n != 3 {
		t.Fatalf("a pass after the deadline released %d, %v; want 3", n, err)
	}
	page, _, err := s.LedgerPage(context.Background(), "acme", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	last := page[len(page)-1]
	if last.Kind != storage.EntryRelease || last.Note != ReleaseReason {
		t.Fatalf("the last entry = %+v; want the reconciler's release", last)
	}
}

// openRedisPair opens two clients (two gateway instances) of one Redis store.
func openRedisPair(t *testing.T) (storage.Store, storage.Store) {
	server := testredis.Start(t, testredis.Options{})
	open := func() storage.Store {
		s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: server.URL(), KeyPrefix: "reconcile"})
		return closedAtEnd(t, s, err)
	}
	return open(), open()
}

// Lapsed runs on every pass of the instance that holds the lease, with the pass's clock, and
// not on another instance's pass meanwhile.
func TestLapsedRunsUnderTheLease(t *testing.T) {
	s := openBadger(t)
	var calls []string
	lapsed := func(name string) func(context.Context, time.Time) (int, error) {
		return func(_ context.Context, now time.Time) (int, error) {
			if !now.Equal(start) {
				t.Errorf("Lapsed on %s at %v; want the pass's clock %v", name, now, start)
			}
			calls = append(calls, name)
			return 1, nil
		}
	}
	a := &Reconciler{Ledger: s, Leases: s, Owner: "a", Now: func() time.Time { return start }, Lapsed: lapsed("a")}
	b := &Reconciler{Ledger: s, Leases: s, Owner: "b", Now: func() time.Time { return start }, Lapsed: lapsed("b")}
	for _, r := range []*Reconciler{a, b, a} {
		if _, err := r.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(calls) != "[a a]" {
		t.Fatalf("Lapsed ran on %v; want a's two passes only", calls)
	}
}
