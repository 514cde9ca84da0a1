package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// maxCachedCounters bounds the counter values Badger keeps in memory; past it the cache starts
// over (every value can be read again from the store), keeping the dirty ones.
const maxCachedCounters = 1 << 16

// counterCache holds the current value of the counters this process has changed or read. Badger
// serves one process and every counter change is decided here, under mu: a durable one
// (addCounter) holds mu from reading the value to handing its write to Badger, a reservation
// (ReserveCounter) only marks the counter dirty, and the next durable commit writes the dirty
// values in its own transaction, under mu too (commitWithCounters). The writes reach Badger in the
// order of the changes, and no change needs a read transaction, so concurrent changes of one counter (every
// create of one key reserves its active-task slot) never conflict and never wait for each
// other's write. (As a Badger transaction, each change read the counter and conflicted with every
// change committed meanwhile: at 32 concurrent creates most of them ran several times.)
//
// A durable change whose write fails is taken out of the cached value (failed), so that the changes
// after it, already handed to Badger with values that included it, are set right by a write of
// the corrected value. A dirty counter stays dirty until a commit that carried it is written
// (not merely handed to Badger): a commit made meanwhile carries it too, since the one in flight
// may still fail (a conflict, a failing disk). The cache starts over only while no write is in
// flight (inFlight), so the value of a counter being written is always there to correct.
type counterCache struct {
	mu     chanMutex
	values map[string]int64
	// dirty are the counters whose cached value Badger may not have written yet (changed by a
	// reservation, ReserveCounter), each with the number of its latest change (from changes), so
	// that a commit's write cleans only the changes it carried. ndirty is their number, read
	// without the lock.
	dirty   map[string]uint64
	changes uint64
	ndirty  atomic.Int64
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
	return b.addCounter(ctx, name, delta, limit)
}

// ReserveCounter changes the cached value only: no Badger transaction of its own. The value is
// written by the next durable commit of this process, whichever it is (a task create, a ledger
// batch, a durable counter change: commitWithCounters), in that commit's own transaction, or at
// Close. The caller's next durable write is such a commit, so the sync that acknowledges it
// covers the reservation; a task create writes its slot in the transaction of its record, and a
// crash keeps both or neither.
func (b *Badger) ReserveCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	if b.commits.closing() {
		return 0, false, badger.ErrDBClosed
	}
	return b.reserve(ctx, name, delta, limit)
}

// reserve is ReserveCounter in a store that may be closing: for the take-back of a change that
// Close waits for (unsynced).
func (b *Badger) reserve(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	c := &b.counters
	if err := c.mu.lock(ctx); err != nil {
		return 0, false, err
	}
	defer c.mu.unlock()
	cur, err := b.counterLocked(name)
	if err != nil {
		return 0, false, err
	}
	if limit >= 0 && delta > 0 && cur+delta > limit {
		return cur, false, nil
	}
	value := cur + delta
	c.values[name] = value
	c.markDirty(name)
	return value, true, nil
}

// addCounter makes a durable change: its transaction writes the counter's new value and every
// other counter a reservation left dirty (setDirty), and it waits for the disk sync.
func (b *Badger) addCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	if !b.commits.enter() {
		return 0, false, badger.ErrDBClosed
	}
	defer b.commits.leave()
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
	names, left, err := c.setDirty(txn, name)
	if err != nil {
		c.mu.unlock()
		return 0, false, err
	}
	c.values[name] = value
	// The transaction reads nothing, so it cannot conflict.
	err = b.handOff(txn, names, left)
	covering := b.sync.end(false) // counters are 8 bytes
	if err != nil {
		b.failed(name, delta)
		return 0, false, err
	}
	c.inFlight.Add(-1)
	if err := b.sync.wait(covering); err != nil {
		return b.unsynced(name, delta, value, err)
	}
	return value, true, nil
}

// commitWithCounters commits txn, an update transaction of a durable commit (commitSerial's, a
// ledger batch's), with the cached value of every dirty counter (ReserveCounter) set in it, so
// that the commit's sync covers the reservations made before it without a transaction of their
// own. It holds the counters' lock from reading their values to handing txn to Badger's writer,
// so that counter values reach Badger in the order of the changes; they stay dirty until txn is
// written, so that a commit that fails leaves them to the next one.
func (b *Badger) commitWithCounters(txn *badger.Txn) error {
	c := &b.counters
	if c.ndirty.Load() == 0 {
		// Every reservation made before this commit was written before it, in an earlier
		// commit's transaction (a counter is cleaned only once that commit is written).
		return txn.Commit()
	}
	// Waited for without end, as failed does: the lock is only ever held briefly.
	if err := c.mu.lock(context.Background()); err != nil {
		return err
	}
	names, left, err := c.setDirty(txn, "")
	if err != nil {
		c.mu.unlock()
		return err
	}
	err = b.handOff(txn, names, left)
	c.inFlight.Add(-1)
	return err
}

// handOff hands txn, which carries the dirty counters names (setDirty), to Badger's writer with
// the counters' lock held, releases the lock and waits for the write. CommitWith takes txn's
// commit timestamp and hands it over at once, in the order of the changes; the next change need
// not wait for the write. Once it is written, the counters not changed since are clean, and those
// txn had no room for (left) are written next. txn counts in inFlight from here; the caller takes
// it out (addCounter's failed does on a failure).
func (b *Badger) handOff(txn *badger.Txn, names []carried, left bool) error {
	c := &b.counters
	done := make(chan error, 1)
	c.inFlight.Add(1)
	c.commitTxn(txn, func(err error) { done <- err })
	c.mu.unlock()
	if err := <-done; err != nil {
		return err
	}
	c.clean(names)
	if left {
		b.writeLeft()
	}
	return nil
}

// writeLeft writes, after a commit, the dirty counters its transaction had no room for
// (setDirty), so that the commit's sync covers every reservation made before it. The commit
// stands whatever happens here: a failure is logged, and leaves them dirty, for the next commit.
func (b *Badger) writeLeft() {
	if err := b.flushCounters(); err != nil {
		b.counters.logger.Error("writing the counter reservations a commit had no room for failed; the next commit writes them",
			zap.Error(err))
	}
}

// markDirty notes that Badger may not have the cached value of the counter name, changed now;
// c.mu is held.
func (c *counterCache) markDirty(name string) {
	if c.dirty == nil {
		c.dirty = make(map[string]uint64)
	}
	if _, ok := c.dirty[name]; !ok {
		c.ndirty.Add(1)
	}
	c.changes++
	c.dirty[name] = c.changes
}

// carried is a dirty counter whose value a commit carries, as of its change number change.
type carried struct {
	name   string
	change uint64
}

// setDirty sets in txn the cached value of every dirty counter, as many as the transaction
// takes (left reports others, which stay dirty: the caller writes them next, writeLeft), and
// returns them; c.mu is held. The counter set (not ""), which the caller's txn writes already,
// is returned but not set again. They stay dirty until clean, called once txn is written.
func (c *counterCache) setDirty(txn *badger.Txn, set string) (names []carried, left bool, err error) {
	names = make([]carried, 0, len(c.dirty))
	for name, change := range c.dirty {
		if name == set {
			names = append(names, carried{name, change})
			continue
		}
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], uint64(c.values[name]))
		err := txn.Set([]byte(prefixCounter+name), buf[:])
		if errors.Is(err, badger.ErrTxnTooBig) {
			return names, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		names = append(names, carried{name, change})
	}
	return names, false, nil
}

// clean notes that a commit carrying the counters names is written: those not changed since
// are no longer dirty.
func (c *counterCache) clean(names []carried) {
	if len(names) == 0 {
		return
	}
	// Waited for without end, as failed does: the lock is only ever held briefly.
	if err := c.mu.lock(context.Background()); err != nil {
		return
	}
	defer c.mu.unlock()
	for _, d := range names {
		if c.dirty[d.name] == d.change {
			delete(c.dirty, d.name)
			c.ndirty.Add(-1)
		}
	}
}

// flushCounters writes the dirty counters in a transaction of their own and waits for it (not
// for a sync: Close syncs what it writes).
func (b *Badger) flushCounters() error {
	if b.counters.ndirty.Load() == 0 {
		return nil
	}
	txn := b.db.NewTransaction(true)
	defer txn.Discard()
	return b.commitWithCounters(txn)
}

// unsynced answers a change that was written but whose disk sync failed (see AddCounter). A
// charge is taken back by a change of -delta, which like any change applies to the counter's
// value of the moment, changes made since included.
func (b *Badger) unsynced(name string, delta, value int64, err error) (int64, bool, error) {
	switch {
	case delta > 0:
		// Not bound to the caller's context: the take-back must not be lost to its deadline.
		// Written at once, as the charge was (not synced: no sync succeeds now).
		_, _, terr := b.reserve(context.Background(), name, -delta, -1)
		if terr == nil {
			terr = b.flushCounters()
		}
		if terr != nil {
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
	// A dirty value, which Badger may not have, is kept.
	if c.values == nil || len(c.values) >= maxCachedCounters && c.inFlight.Load() == 0 {
		values := make(map[string]int64, len(c.dirty)+1)
		for d := range c.dirty {
			values[d] = c.values[d]
		}
		c.values = values
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
