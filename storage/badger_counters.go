package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
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
type counterCache struct {
	mu     chanMutex
	values map[string]int64
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

func (b *Badger) AddCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	return b.addCounter(ctx, name, delta, limit, true)
}

// ReserveCounter does not wait for a disk sync: Badger's logs are written in order, and the sync
// that acknowledges the caller's next durable write covers every write committed before it.
func (b *Badger) ReserveCounter(ctx context.Context, name string, delta, limit int64) (int64, bool, error) {
	return b.addCounter(ctx, name, delta, limit, false)
}

func (b *Badger) addCounter(ctx context.Context, name string, delta, limit int64, durable bool) (int64, bool, error) {
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
	txn.CommitWith(func(err error) { done <- err })
	c.values[name] = value
	c.mu.unlock()
	err = <-done
	if durable {
		b.sync.end()
	}
	if err != nil {
		// Start again from the store: a later change may have been built on this one.
		if c.mu.lock(context.WithoutCancel(ctx)) == nil {
			clear(c.values)
			c.mu.unlock()
		}
		return 0, false, err
	}
	if durable {
		if err := b.sync.wait(); err != nil {
			return 0, false, err
		}
	}
	return value, true, nil
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
	if c.values == nil || len(c.values) >= maxCachedCounters {
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
	raw, err := txnGet(txn, prefixCounter+name)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(raw) != 8 {
		return 0, fmt.Errorf("counter %s is corrupt", name)
	}
	return int64(binary.BigEndian.Uint64(raw)), nil
}
