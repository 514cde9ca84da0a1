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
	pending meterCounts
	stop    chan struct{}
	done    sync.WaitGroup
	// unsynced names a counter changed by a flush whose durable write failed: the next flush
	// writes it durably even when nothing is pending. Only the flushing goroutine uses it.
	unsynced string
}

// NewMeter starts a meter that flushes to store every interval.
func NewMeter(store storage.Store, interval time.Duration, logger *zap.Logger) *Meter {
	m := &Meter{store: store, logger: logger, pending: newMeterCounts(), stop: make(chan struct{})}
	m.done.Add(1)
	go m.run(interval)
	return m
}

// counterName is a counter's name in parts, joined only when the meter flushes (or Value reads
// it), so that counting a request builds no string (see meterCounts): a usage counter is its kind
// and the key id or account name (see KeyUsage, AccountUsage); any other (Meter.AddAll) is its
// whole name in id, with kind usageNone.
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
			m.pending.named[name] += deltas[i]
		}
	}
	m.mu.Unlock()
}

// add counts delta in the usage counter of kind of the key and of its account, under one lock.
func (m *Meter) add(delta int64, kind usageKind, keyID, account string) {
	m.mu.Lock()
	m.pending.keys.tally(keyID)[kind] += delta
	m.pending.accounts.tally(account)[kind] += delta
	m.mu.Unlock()
}

// Value is the stored count plus what is not flushed yet.
func (m *Meter) Value(ctx context.Context, name string) (int64, error) {
	v, err := m.store.Counter(ctx, name)
	m.mu.Lock()
	m.pending.each(func(n counterName, delta int64) {
		if n.String() == name {
			v += delta
		}
	})
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
	m.pending = newMeterCounts()
	m.mu.Unlock()
	ctx := context.Background()
	last := m.unsynced
	pending.each(func(n counterName, delta int64) {
		name := n.String()
		if _, _, err := m.store.ReserveCounter(ctx, name, delta, -1); err != nil {
			m.logger.Error("storing usage counter", zap.String("counter", name), zap.Error(err))
			m.addTo(n, delta) // keep it for the next flush
			return
		}
		last = name
	})
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
	switch {
	case n.kind == usageNone:
		m.pending.named[n.id] += delta
	case n.account:
		m.pending.accounts.tally(n.id)[n.kind] += delta
	default:
		m.pending.keys.tally(n.id)[n.kind] += delta
	}
	m.mu.Unlock()
}

// meterCounts is what a meter has counted and not flushed: the usage counters of keys and of
// accounts, each key's and each account's kinds together under its id, and any other counter
// under its name. Every map is keyed by a string, which Go's maps hash on a fast path: a request
// counts its key's and its account's requests (and a priced one its spend) under the meter's
// lock, where a struct key (kind, account, id) hashed about three times slower.
type meterCounts struct {
	keys, accounts tallies
	named          map[string]int64
}

func newMeterCounts() meterCounts {
	return meterCounts{keys: tallies{}, accounts: tallies{}, named: map[string]int64{}}
}

// tallies are the usage counts of keys or of accounts, by id.
type tallies map[string]*usageTally

// usageTally is one key's or account's usage counts, by usageKind (usageNone is not used).
type usageTally [len(usageNames)]int64

// tally is id's usage counts, made on first use.
func (t tallies) tally(id string) *usageTally {
	c := t[id]
	if c == nil {
		c = new(usageTally)
		t[id] = c
	}
	return c
}

// each calls fn with every counter counted and its delta. A usage kind whose count is 0 is left
// out: the meter counts only positive deltas in them, so it was not counted.
func (c meterCounts) each(fn func(n counterName, delta int64)) {
	for _, usage := range [...]struct {
		t       tallies
		account bool
	}{{c.keys, false}, {c.accounts, true}} {
		for id, counts := range usage.t {
			for kind, delta := range counts {
				if delta != 0 {
					fn(counterName{kind: usageKind(kind), account: usage.account, id: id}, delta)
				}
			}
		}
	}
	for name, delta := range c.named {
		fn(counterName{id: name}, delta)
	}
}
