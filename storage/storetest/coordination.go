package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

func testLeases(t *testing.T, s storage.Store) {
	ctx := context.Background()
	base := time.Now()
	mustAcquire := func(owner string, at time.Time, want bool) {
		t.Helper()
		got, err := s.AcquireLease(ctx, "poll/cgt-1", owner, at, 10*time.Second)
		if err != nil || got != want {
			t.Fatalf("AcquireLease(%s) = %v, %v; want %v", owner, got, err, want)
		}
	}
	mustAcquire("a", base, true)
	mustAcquire("b", base.Add(time.Second), false)
	mustAcquire("a", base.Add(time.Second), true) // renews
	if err := s.RenewLease(ctx, "poll/cgt-1", "b", base, 10*time.Second); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("Renew by a non-holder = %v", err)
	}
	if err := s.RenewLease(ctx, "poll/cgt-1", "a", base.Add(5*time.Second), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	mustAcquire("b", base.Add(14*time.Second), false) // renewed until 15 s
	mustAcquire("b", base.Add(16*time.Second), true)  // a's lease ran out
	if err := s.RenewLease(ctx, "poll/cgt-1", "a", base.Add(16*time.Second), 10*time.Second); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("Renew of a lost lease = %v", err)
	}
	if err := s.ReleaseLease(ctx, "poll/cgt-1", "a"); err != nil { // not a's: left alone
		t.Fatal(err)
	}
	mustAcquire("c", base.Add(17*time.Second), false)
	if err := s.ReleaseLease(ctx, "poll/cgt-1", "b"); err != nil {
		t.Fatal(err)
	}
	mustAcquire("c", base.Add(17*time.Second), true)
}

// testRenewLeases: renewing many leases at once renews each that the owner still holds, reports
// the others by index (one taken by another owner, one run out, one never taken) and leaves them
// as they are.
func testRenewLeases(t *testing.T, s storage.Store) {
	ctx := context.Background()
	base := time.Now()
	names := []string{"watch/4/0", "watch/4/1", "watch/4/2", "watch/4/3", "watch/4/never"}
	for _, name := range names[:4] {
		if ok, err := s.AcquireLease(ctx, name, "a", base, 10*time.Second); err != nil || !ok {
			t.Fatalf("AcquireLease(%s) = %v, %v", name, ok, err)
		}
	}
	// watch/4/2 is lost: it is freed and taken by b.
	if err := s.ReleaseLease(ctx, "watch/4/2", "a"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.AcquireLease(ctx, "watch/4/2", "b", base.Add(time.Second), 10*time.Second); err != nil || !ok {
		t.Fatalf("AcquireLease by b = %v, %v", ok, err)
	}
	lost, err := s.RenewLeases(ctx, names, "a", base.Add(5*time.Second), 10*time.Second)
	if err != nil || !slices.Equal(lost, []int{2, 4}) {
		t.Fatalf("RenewLeases = %v, %v; want [2 4]", lost, err)
	}
	// The renewed leases run until 15 s; b's lease is still b's, until 11 s.
	for _, name := range []string{"watch/4/0", "watch/4/1", "watch/4/3"} {
		if ok, err := s.AcquireLease(ctx, name, "b", base.Add(14*time.Second), 10*time.Second); err != nil || ok {
			t.Fatalf("AcquireLease(%s) by b before the renewed lease ended = %v, %v", name, ok, err)
		}
	}
	if ok, err := s.AcquireLease(ctx, "watch/4/2", "c", base.Add(10*time.Second), 10*time.Second); err != nil || ok {
		t.Fatalf("b's lease was not left alone: AcquireLease by c = %v, %v", ok, err)
	}
	if err := s.RenewLease(ctx, "watch/4/never", "a", base.Add(5*time.Second), time.Second); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("a lease never taken was made by RenewLeases: %v", err)
	}
	// A renewal may cut a lease short: watch/4/0 now ends at 13 s, and b takes it then, while
	// watch/4/1 still runs until 15 s.
	if lost, err := s.RenewLeases(ctx, names[:1], "a", base.Add(12*time.Second), time.Second); err != nil || len(lost) != 0 {
		t.Fatalf("RenewLeases(cut short) = %v, %v", lost, err)
	}
	if ok, err := s.AcquireLease(ctx, "watch/4/0", "b", base.Add(13500*time.Millisecond), 10*time.Second); err != nil || !ok {
		t.Fatalf("AcquireLease of a cut lease after it ended = %v, %v", ok, err)
	}
	if ok, err := s.AcquireLease(ctx, "watch/4/1", "b", base.Add(13500*time.Millisecond), 10*time.Second); err != nil || ok {
		t.Fatalf("AcquireLease(watch/4/1) before its lease ended = %v, %v", ok, err)
	}
	lost, err = s.RenewLeases(ctx, names[:2], "a", base.Add(14*time.Second), 10*time.Second)
	if err != nil || !slices.Equal(lost, []int{0}) {
		t.Fatalf("RenewLeases after b took watch/4/0 = %v, %v; want [0]", lost, err)
	}
	if ok, err := s.AcquireLease(ctx, "watch/4/1", "b", base.Add(20*time.Second), 10*time.Second); err != nil || ok {
		t.Fatalf("AcquireLease(watch/4/1) at 20 s = %v, %v; renewed until 24 s", ok, err)
	}
	if lost, err := s.RenewLeases(ctx, nil, "a", base, time.Second); err != nil || len(lost) != 0 {
		t.Fatalf("RenewLeases(none) = %v, %v", lost, err)
	}
}

func testLeaseRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	now := time.Now()
	holders := winners(t, 20, func(i int) (bool, error) {
		return s.AcquireLease(ctx, "race", fmt.Sprint("owner", i), now, time.Minute)
	})
	if holders != 1 {
		t.Fatalf("%d owners hold one lease", holders)
	}
}

func testCounterManyGoroutines(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.AddCounter(ctx, "usage/x", 1, -1); err != nil {
				t.Errorf("AddCounter: %v", err)
			}
		}()
	}
	wg.Wait()
	if v, err := s.Counter(ctx, "usage/x"); err != nil || v != n {
		t.Fatalf("counter = %d, %v; want %d", v, err, n)
	}
	if v, err := s.Counter(ctx, "never"); err != nil || v != 0 {
		t.Fatalf("unwritten counter = %d, %v", v, err)
	}
}

// testCounterLimiters: limiters racing at one limit admit exactly the limit, whether they add
// or reserve; giving back frees room; a decrement is never refused.
func testCounterLimiters(t *testing.T, s storage.Store) {
	ctx := context.Background()
	add := map[bool]func(ctx context.Context, name string, delta, limit int64) (int64, bool, error){
		false: s.AddCounter, true: s.ReserveCounter,
	}
	const limit = 10
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				_, ok, err := add[i == 1](ctx, "active/k", 1, limit)
				if err != nil {
					t.Errorf("AddCounter: %v", err)
					return
				}
				if ok {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != limit {
		t.Fatalf("admitted %d at limit %d", admitted.Load(), limit)
	}
	if v, ok, err := s.AddCounter(ctx, "active/k", 3, limit); err != nil || ok || v != limit {
		t.Fatalf("over the limit = %d, %v, %v", v, ok, err)
	}
	if v, ok, err := s.AddCounter(ctx, "active/k", -1, limit); err != nil || !ok || v != limit-1 {
		t.Fatalf("give back = %d, %v, %v", v, ok, err)
	}
	if _, ok, _ := s.AddCounter(ctx, "active/k", 1, limit); !ok {
		t.Fatal("a freed slot was refused")
	}
}

func testRateWindow(t *testing.T, s storage.Store) {
	ctx := context.Background()
	base := time.Unix(1_800_000_000, 0)
	for i := range 3 {
		ok, _, err := s.AllowRate(ctx, "rate/k", 3, time.Minute, base.Add(time.Duration(i)*time.Second))
		if err != nil || !ok {
			t.Fatalf("call %d refused: %v", i, err)
		}
	}
	ok, wait, err := s.AllowRate(ctx, "rate/k", 3, time.Minute, base.Add(10*time.Second))
	if err != nil || ok || wait <= 0 || wait > time.Minute {
		t.Fatalf("fourth call = %v, %v, %v; want refused with a wait within the window", ok, wait, err)
	}
	if ok, _, _ := s.AllowRate(ctx, "rate/other", 3, time.Minute, base.Add(10*time.Second)); !ok {
		t.Fatal("windows of two names are shared")
	}
	if ok, _, _ := s.AllowRate(ctx, "rate/k", 3, time.Minute, base.Add(10*time.Second+wait+time.Second)); !ok {
		t.Fatal("a call after the advised wait was refused")
	}
}

func testRateWindowRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	now := time.Now()
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				ok, _, err := s.AllowRate(ctx, "rate/race", 10, time.Hour, now)
				if err != nil {
					t.Errorf("AllowRate: %v", err)
					return
				}
				if ok {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 10 {
		t.Fatalf("allowed %d in a window of 10", allowed.Load())
	}
}

func testSettingOnce(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var mu sync.Mutex
	values := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := s.SettingOnce(ctx, "webhook-secret", []byte(fmt.Sprint("secret", i)))
			if err != nil {
				t.Errorf("SettingOnce: %v", err)
				return
			}
			mu.Lock()
			values[string(v)] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(values) != 1 {
		t.Fatalf("concurrent SettingOnce agreed on %d values", len(values))
	}
}
