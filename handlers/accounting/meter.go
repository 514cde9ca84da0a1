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
//
// A flush reserves each counter's change (storage.Coordination.ReserveCounter) and then makes
// them all durable with one durable write that changes nothing (a zero delta): retrying that
// write cannot count anything twice. A change whose reservation fails is kept for the next flush;
// when the durable write fails, the changes are stored but may not be on disk, and the next flush
// makes the durable write again, even with nothing new to store. A crash before it succeeds may
// lose them.
type Meter struct {
	store  storage.Store
	logger *zap.Logger

	mu      sync.Mutex
	pending map[counterName]int64
	stop    chan struct{}
	done    sync.WaitGroup
	// unsynced names a counter changed by a flush whose durable write failed: the next flush
	// writes it durably even when nothing is pending. Only the flushing goroutine uses it.
	unsynced string
}

// NewMeter starts a meter that flushes to store every interval.
func NewMeter(store storage.Store, interval time.Duration, logger *zap.Logger) *Meter {
	m := &Meter{store: store, logger: logger, pending: map[counterName]int64{}, stop: make(chan struct{})}
	m.done.Add(1)
	go m.run(interval)
	return m
}

// counterName is a counter's name in parts, joined only when the meter flushes, so that counting
// a request builds no string and its map key hashes one string: a usage counter is its kind and
// the key id or account name (see KeyUsage, AccountUsage); any other (Meter.AddAll) is its whole
// name in id, with kind usageNone.
type counterName struct {
	kind    usageKind
	account bool // the account's counter, not the key's
	id      string
}

// usageKind is a usage counter's kind: UsageRequests, UsageTasks or UsageSpent.
type usageKind uint8

const (
	usageNone usageKind = iota
	usageRequests
	usageTasks
	usageSpent
)

// usageNames are the usage kinds' names in counter names.
var usageNames = [...]string{usageRequests: UsageRequests, usageTasks: UsageTasks, usageSpent: UsageSpent}

func (n counterName) String() string {
	switch {
	case n.kind == usageNone:
		return n.id
	case n.account:
		return AccountUsage(n.id, usageNames[n.kind])
	default:
		return KeyUsage(n.id, usageNames[n.kind])
	}
}

// AddAll counts deltas[i] under names[i], each i, under one lock; a zero delta changes nothing.
func (m *Meter) AddAll(names []string, deltas []int64) {
	m.mu.Lock()
	for i, name := range names {
		if deltas[i] != 0 {
			m.pending[counterName{id: name}] += deltas[i]
		}
	}
	m.mu.Unlock()
}

// add counts delta in the usage counter of kind of the key and of its account, under one lock.
func (m *Meter) add(delta int64, kind usageKind, keyID, account string) {
	m.mu.Lock()
	m.pending[counterName{kind: kind, id: keyID}] += delta
	m.pending[counterName{kind: kind, account: true, id: account}] += delta
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

// flush stores what is pending (see Meter).
func (m *Meter) flush() {
	m.mu.Lock()
	pending := m.pending
	m.pending = map[counterName]int64{}
	m.mu.Unlock()
	ctx := context.Background()
	last := m.unsynced
	for n, delta := range pending {
		name := n.String()
		if _, _, err := m.store.ReserveCounter(ctx, name, delta, -1); err != nil {
			m.logger.Error("storing usage counter", zap.String("counter", name), zap.Error(err))
			m.addTo(n, delta) // keep it for the next flush
			continue
		}
		last = name
	}
	if last == "" {
		return // nothing stored, nothing owed
	}
	// One disk sync per flush: a durable write makes every reservation before it durable too.
	if _, _, err := m.store.AddCounter(ctx, last, 0, -1); err != nil {
		m.logger.Error("syncing usage counters", zap.String("counter", last), zap.Error(err))
		m.unsynced = last
		return
	}
	m.unsynced = ""
}

// addTo counts delta under n.
func (m *Meter) addTo(n counterName, delta int64) {
	m.mu.Lock()
	m.pending[n] += delta
	m.mu.Unlock()
}
