package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// maxCachedCounters bounds the counter values Badger keeps in memory; past it the cache starts
// over (every value can be read again from the store).
const maxCachedCounters = 1 << 16

// counterCache holds the current value of the counters this process has changed or read. Badger
// serves one process and every counter change goes through addCounter, which holds mu from
// reading the value to handing its write to Badger: the writes reach Badger in the order of the
// changes, and no change needs a read transaction, so concurrent changes of one counter (every
// create of one key reserves its active-task slot) never conflict and never wait for each
// other's write. (As a Badger transaction, each change read the counter and conflicted with every
// change committed meanwhile: at 32 concurrent creates most of them ran several times.)
//
// A change whose write fails is taken out of the cached value (failed), so that the changes
// after it, already handed to Badger with values that included it, are set right by a write of
// the corrected value. The cache starts over only while no write is in flight (inFlight), so the
// value of a counter being written is always there to correct.
type counterCache struct {
	mu     chanMutex
	values map[string]int64
	// inFlight counts the writes handed to Badger and not yet done.
	inFlight atomic.Int64
	// commit hands a transaction to Badger (txn.CommitWith; tests make it fail).
	commit func(txn *badger.Txn, done func(error))
	logger *zap.Logger
}

// chanMutex is a mutex whose lock gives up when ctx ends.
type chanMutex chan struct{}

func (m chanMutex) lock(ctx context.Context) error {
	select {
	case m <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m chanMutex) unlock() { <-m }

// AddCounter waits for a disk sync of the change. When the change was written but that sync
// fails, the outcome is told as it stands, as on Redis when too few replicas confirm: a charge
// (delta > 0) is taken back and the call fails, so that its caller, which treats it as not made,
// is right; a give-back (delta < 0: a refund, a slot release) stays and counts as done, with a
// warning, since its callers retry a failed one and each retry would give back again (it reaches
// the disk with the next sync that succeeds: the logs are written in order). A change of 0 (a
// request for a sync alone) fails.
func (b *Badger) AddCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	return b.addCounter(ctx, name, delta, limit, true)
}

// ReserveCounter does not wait for a disk sync: Badger's logs are written in order, and the sync
// that acknowledges the caller's next durable write covers every write committed before it.
func (b *Badger) ReserveCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	return b.addCounter(ctx, name, delta, limit, false)
}

func (b *Badger) addCounter(ctx context.Context, name string, delta, limit int64, durable bool) (int64, bool, error) {
	if durable {
		if !b.commits.enter() {
			return 0, false, badger.ErrDBClosed
		}
		defer b.commits.leave()
	}
	// A new update transaction waits for the writes handed to Badger before to be applied:
	// start it before taking the lock, so that changes do not wait for each other.
	txn := b.db.NewTransaction(true)
	defer txn.Discard()
	c := &b.counters
	if err := c.mu.lock(ctx); err != nil {
		return 0, false, err
	}
	cur, err := b.counterLocked(name)
	if err != nil {
		c.mu.unlock()
		return 0, false, err
	}
	if limit >= 0 && delta > 0 && cur+delta > limit {
		c.mu.unlock()
		return cur, false, nil
	}
	value := cur + delta
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(value))
	if err := txn.Set([]byte(prefixCounter+name), buf[:]); err != nil {
		c.mu.unlock()
		return 0, false, err
	}
	if durable {
		b.sync.begin()
	}
	// The transaction reads nothing, so it cannot conflict. CommitWith takes its commit
	// timestamp and hands the write to Badger's writer now, in the order of the changes, and
	// calls back once it is written; the next change need not wait for that.
	done := make(chan error, 1)
	c.inFlight.Add(1)
	c.commitTxn(txn, func(err error) { done <- err })
	c.values[name] = value
	c.mu.unlock()
	err = <-done
	var covering *syncRound
	if durable {
		covering = b.sync.end(false) // a counter is 8 bytes
	}
	if err != nil {
		b.failed(name, delta)
		return 0, false, err
	}
	c.inFlight.Add(-1)
	if durable {
		if err := b.sync.wait(covering); err != nil {
			return b.unsynced(name, delta, value, err)
		}
	}
	return value, true, nil
}

// unsynced answers a change that was written but whose disk sync failed (see AddCounter). A
// charge is taken back by a change of -delta, which like any change applies to the counter's
// value of the moment, changes made since included.
func (b *Badger) unsynced(name string, delta, value int64, err error) (int64, bool, error) {
	switch {
	case delta > 0:
		// Not bound to the caller's context: the take-back must not be lost to its deadline.
		if _, _, terr := b.addCounter(context.Background(), name, -delta, -1, false); terr != nil {
			b.counters.logger.Error("taking back a counter charge whose disk sync failed failed too: the counter stays off by delta",
				zap.String("counter", name), zap.Int64("delta", delta), zap.Error(terr))
			return 0, false, err
		}
		return 0, false, fmt.Errorf("the change of counter %s was taken back: %w", name, err)
	case delta < 0:
		b.counters.logger.Warn("a counter give-back is written but its disk sync failed: it stands, and reaches the disk with the next sync that succeeds",
			zap.String("counter", name), zap.Int64("delta", delta), zap.Error(err))
		return value, true, nil
	}
	return 0, false, err
}

// commitTxn hands a transaction to Badger, which calls done once it is written.
func (c *counterCache) commitTxn(txn *badger.Txn, done func(error)) {
	if c.commit != nil {
		c.commit(txn, done)
		return
	}
	txn.CommitWith(done)
}

// failed takes the delta of a change whose write failed out of its counter's cached value, and
// writes the corrected value at once. The changes handed to Badger after the failed one were
// built on its value; those that were written put the failed delta on disk, though its caller
// was told the change failed (a slot that would never be released, a use counted twice). The
// corrected value then reaches the disk with this write, or, should it fail too (a failing disk),
// with the next change of the counter, built on the corrected cached value: until then the value
// on disk stays wrong, and a process that ends meanwhile leaves it so.
func (b *Badger) failed(name string, delta int64) {
	c := &b.counters
	// Started before taking the lock, as in addCounter.
	txn := b.db.NewTransaction(true)
	defer txn.Discard()
	// The lock is waited for without end: the correction must not be lost to a caller's
	// deadline (the lock is only ever held briefly).
	if err := c.mu.lock(context.Background()); err != nil {
		c.inFlight.Add(-1)
		return
	}
	defer c.mu.unlock()
	// The cache did not start over while this write was in flight, so the value is here.
	value, ok := c.values[name]
	c.inFlight.Add(-1)
	if !ok {
		return
	}
	value -= delta
	c.values[name] = value
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(value))
	if err := txn.Set([]byte(prefixCounter+name), buf[:]); err != nil {
		return // the next change of the counter writes the corrected value
	}
	// Not waited for: a failure leaves the correction to the counter's next change, which is
	// built on the corrected cached value. Counted in flight, so that the cache keeps the value
	// until the write is done.
	c.inFlight.Add(1)
	c.commitTxn(txn, func(error) { c.inFlight.Add(-1) })
}

// counterLocked returns a counter's value, from the cache or else from the store (a read
// transaction waits for the writes handed to Badger before to be applied, so it sees them).
// c.mu must be held.
func (b *Badger) counterLocked(name string) (int64, error) {
	c := &b.counters
	if v, ok := c.values[name]; ok {
		return v, nil
	}
	var v int64
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		v, err = txnCounter(txn, name)
		return err
	})
	if err != nil {
		return 0, err
	}
	// Starting over while a write is in flight would lose the value its failure must correct.
	if c.values == nil || len(c.values) >= maxCachedCounters && c.inFlight.Load() == 0 {
		c.values = make(map[string]int64)
	}
	c.values[name] = v
	return v, nil
}

func (b *Badger) Counter(ctx context.Context, name string) (int64, error) {
	if err := b.counters.mu.lock(ctx); err != nil {
		return 0, err
	}
	defer b.counters.mu.unlock()
	return b.counterLocked(name)
}

func txnCounter(txn *badger.Txn, name string) (int64, error) {
	v, _, err := txnInt64(txn, prefixCounter+name)
	return v, err
}
