package accounting

import (
	"context"
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

// TestMeterFlushIsOneDurableWrite: a flush of several counters stores every one of them and
// waits for one durable write, the last, which makes the others durable too.
func TestMeterFlushIsOneDurableWrite(t *testing.T) {
	badger, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer badger.Close()
	store := &countingStore{Store: badger}
	m := NewMeter(store, time.Hour, zap.NewNop())
	for i, name := range []string{"usage/a", "usage/b", "usage/c", "usage/d"} {
		m.Add(name, int64(i+1))
	}
	m.Close() // flushes
	if d, r := store.durable.Load(), store.reserved.Load(); d != 1 || r != 3 {
		t.Fatalf("a flush of 4 counters made %d durable writes and %d reservations, want 1 and 3", d, r)
	}
	for i, name := range []string{"usage/a", "usage/b", "usage/c", "usage/d"} {
		if v, err := badger.Counter(context.Background(), name); err != nil || v != int64(i+1) {
			t.Fatalf("%s = %d, %v; want %d", name, v, err, i+1)
		}
	}
}
