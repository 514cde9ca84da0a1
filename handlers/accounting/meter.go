package accounting

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// Meter counts usage (requests, tasks, quota consumed) in memory and adds it to the store's
// counters every interval, so that counting a request does not cost a synced write. A crash loses
// at most one interval of request counts; quota itself is never metered this way.
type Meter struct {
	store  storage.Store
	logger *zap.Logger

	mu      sync.Mutex
	pending map[counterName]int64
	stop    chan struct{}
	done    sync.WaitGroup
}

// NewMeter starts a meter that flushes to store every interval.
func NewMeter(store storage.Store, interval time.Duration, logger *zap.Logger) *Meter {
	m := &Meter{store: store, logger: logger, pending: map[counterName]int64{}, stop: make(chan struct{})}
	m.done.Add(1)
	go m.run(interval)
	return m
}

// counterName is a counter's name in parts (see KeyUsage, AccountUsage), joined only when the
// meter flushes, so that counting a request builds no string.
type counterName struct{ prefix, id, what string }

func (n counterName) String() string {
	if n.what == "" {
		return n.prefix + n.id
	}
	return n.prefix + n.id + "/" + n.what
}

// Add counts delta under name.
func (m *Meter) Add(name string, delta int64) { m.add(delta, counterName{prefix: name}) }

// add counts delta under each of names, under one lock.
func (m *Meter) add(delta int64, names ...counterName) {
	m.mu.Lock()
	for _, n := range names {
		m.pending[n] += delta
	}
	m.mu.Unlock()
}

// Value is the stored count plus what is not flushed yet.
func (m *Meter) Value(ctx context.Context, name string) (int64, error) {
	v, err := m.store.Counter(ctx, name)
	m.mu.Lock()
	for n, delta := range m.pending {
		if n.String() == name {
			v += delta
		}
	}
	m.mu.Unlock()
	return v, err
}

// Close flushes what is pending and stops the meter.
func (m *Meter) Close() {
	close(m.stop)
	m.done.Wait()
}

func (m *Meter) run(interval time.Duration) {
	defer m.done.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			m.flush()
			return
		case <-t.C:
			m.flush()
		}
	}
}

func (m *Meter) flush() {
	m.mu.Lock()
	pending := m.pending
	m.pending = map[counterName]int64{}
	m.mu.Unlock()
	// One disk sync per flush: every counter but the last is a reservation, which the last
	// one's durable write makes durable too (see storage.Coordination.ReserveCounter).
	left := len(pending)
	for n, delta := range pending {
		left--
		add := m.store.ReserveCounter
		if left == 0 {
			add = m.store.AddCounter
		}
		name := n.String()
		if _, _, err := add(context.Background(), name, delta, -1); err != nil {
			m.logger.Error("storing usage counter", zap.String("counter", name), zap.Error(err))
			m.add(delta, n) // keep it for the next flush
		}
	}
}
