package accounting

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// countingStore counts the durable counter writes and the reservations made through it.
type countingStore struct {
	storage.Store
	durable, reserved atomic.Int32
}

func (s *countingStore) AddCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	s.durable.Add(1)
	return s.Store.AddCounter(ctx, name, delta, limit)
}

func (s *countingStore) ReserveCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	s.reserved.Add(1)
	return s.Store.ReserveCounter(ctx, name, delta, limit)
}

// countingMeter is a meter that flushes (only when closed) to a Badger store through a
// countingStore; the store is closed with the test.
func countingMeter(t testing.TB) (*storage.Badger, *countingStore, *Meter) {
	t.Helper()
	badger, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := badger.Close(); err != nil {
			t.Error(err)
		}
	})
	store := &countingStore{Store: badger}
	return badger, store, NewMeter(store, time.Hour, zap.NewNop())
}

// TestMeterFlushIsOneDurableWrite: a flush of several counters reserves every one of them and
// waits for one durable write, which makes them durable.
func TestMeterFlushIsOneDurableWrite(t *testing.T) {
	badger, store, m := countingMeter(t)
	m.AddAll([]string{"usage/a", "usage/b", "usage/c", "usage/d"}, []int64{1, 2, 3, 4})
	m.Close() // flushes
	if d, r := store.durable.Load(), store.reserved.Load(); d != 1 || r != 4 {
		t.Fatalf("a flush of 4 counters made %d durable writes and %d reservations, want 1 and 4", d, r)
	}
	for i, name := range []string{"usage/a", "usage/b", "usage/c", "usage/d"} {
		if v, err := badger.Counter(context.Background(), name); err != nil || v != int64(i+1) {
			t.Fatalf("%s = %d, %v; want %d", name, v, err, i+1)
		}
	}
}

// unsyncedStore fails its next durable write after making it, as a store whose disk sync failed.
type unsyncedStore struct {
	countingStore
	fail atomic.Bool
}

func (s *unsyncedStore) AddCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	v, ok, err := s.countingStore.AddCounter(ctx, name, delta, limit)
	if err == nil && s.fail.CompareAndSwap(true, false) {
		return 0, false, errors.New("sync failed")
	}
	return v, ok, err
}

// TestMeterRetriesAFailedSyncWithoutCountingTwice: when a flush's durable write fails, the next
// flush makes it again, though nothing new is pending, and no change is stored twice.
func TestMeterRetriesAFailedSyncWithoutCountingTwice(t *testing.T) {
	badger, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer badger.Close()
	store := &unsyncedStore{countingStore: countingStore{Store: badger}}
	m := NewMeter(store, time.Hour, zap.NewNop())
	defer m.Close()
	m.AddAll([]string{"usage/a", "usage/b"}, []int64{1, 2})
	store.fail.Store(true)
	m.flush()
	if d := store.durable.Load(); d != 1 {
		t.Fatalf("the first flush made %d durable writes, want 1", d)
	}
	m.flush()
	if d := store.durable.Load(); d != 2 {
		t.Fatalf("after a failed durable write, a flush with nothing pending made %d durable writes in all, want 2", d)
	}
	m.flush()
	if d := store.durable.Load(); d != 2 {
		t.Fatalf("after a good durable write, a flush with nothing pending made %d durable writes in all, want 2", d)
	}
	for name, want := range map[string]int64{"usage/a": 1, "usage/b": 2} {
		if v, err := badger.Counter(context.Background(), name); err != nil || v != want {
			t.Fatalf("%s = %d, %v; want %d", name, v, err, want)
		}
	}
}

// TestMeterAddAll: AddAll counts each delta under its own name, a zero delta creates no stored
// counter, and what it counted is read back before and after the flush.
func TestMeterAddAll(t *testing.T) {
	badger, store, m := countingMeter(t)
	names := []string{"usage/agg/a", "usage/agg/zero", "usage/agg/b"}
	m.AddAll(names, []int64{2, 0, 5})
	m.AddAll(names, []int64{1, 0, 0})
	ctx := context.Background()
	for name, want := range map[string]int64{"usage/agg/a": 3, "usage/agg/zero": 0, "usage/agg/b": 5} {
		if v, err := m.Value(ctx, name); err != nil || v != want {
			t.Errorf("before the flush, %s = %d, %v; want %d", name, v, err, want)
		}
	}
	m.Close()
	if r := store.reserved.Load(); r != 2 {
		t.Errorf("the flush reserved %d counters, want 2 (a zero delta stores nothing)", r)
	}
	for name, want := range map[string]int64{"usage/agg/a": 3, "usage/agg/b": 5} {
		if v, err := badger.Counter(ctx, name); err != nil || v != want {
			t.Errorf("stored %s = %d, %v; want %d", name, v, err, want)
		}
	}
}

// reserveFailingStore fails the reservation of one counter while fail is set.
type reserveFailingStore struct {
	countingStore
	name string
	fail atomic.Bool
}

func (s *reserveFailingStore) ReserveCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	if name == s.name && s.fail.Load() {
		return 0, false, errors.New("reservation failed")
	}
	return s.countingStore.ReserveCounter(ctx, name, delta, limit)
}

// TestMeterUsageNames: a key's and an account's usage counts are kept apart by kind and stored
// under KeyUsage and AccountUsage, beside the counters of AddAll; a key and an account of the
// same name are different counters; what is pending is read back before the flush; a counter
// whose reservation failed is kept and stored by the next flush, once.
func TestMeterUsageNames(t *testing.T) {
	badger, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer badger.Close()
	store := &reserveFailingStore{countingStore: countingStore{Store: badger}, name: AccountUsage("same", UsageSpent)}
	m := NewMeter(store, time.Hour, zap.NewNop())
	defer m.Close()
	m.add(1, usageRequests, "same", "same")
	m.add(1, usageRequests, "same", "same")
	m.add(1, usageTasks, "k2", "same")
	m.add(250, usageSpent, "same", "same")
	m.AddAll([]string{"usage/agg/x"}, []int64{7})
	want := map[string]int64{
		KeyUsage("same", UsageRequests): 2, AccountUsage("same", UsageRequests): 2,
		KeyUsage("k2", UsageTasks): 1, AccountUsage("same", UsageTasks): 1,
		KeyUsage("same", UsageSpent): 250, AccountUsage("same", UsageSpent): 250,
		KeyUsage("same", UsageTasks): 0, KeyUsage("k2", UsageRequests): 0,
		"usage/agg/x": 7,
	}
	ctx := context.Background()
	for name, n := range want {
		if v, err := m.Value(ctx, name); err != nil || v != n {
			t.Errorf("pending %s = %d, %v; want %d", name, v, err, n)
		}
	}
	store.fail.Store(true)
	m.flush()
	if r := store.reserved.Load(); r != 6 {
		t.Errorf("the flush reserved %d counters, want 6 (the seven counted, one failing; no zero counts)", r)
	}
	if v, err := badger.Counter(ctx, AccountUsage("same", UsageSpent)); err != nil || v != 0 {
		t.Errorf("a counter whose reservation failed was stored: %d, %v", v, err)
	}
	store.fail.Store(false)
	m.flush()
	m.flush()
	for name, n := range want {
		if v, err := badger.Counter(ctx, name); err != nil || v != n {
			t.Errorf("stored %s = %d, %v; want %d", name, v, err, n)
		}
		if v, err := m.Value(ctx, name); err != nil || v != n {
			t.Errorf("%s after the flushes = %d, %v; want %d", name, v, err, n)
		}
	}
}
