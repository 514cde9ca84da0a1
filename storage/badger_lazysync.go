package storage

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// lazySyncDelay bounds how long a lazy ledger write stays in the operating system's
// cache only: a disk sync starts at most this long after it. docs/billing.md ("Crash
// semantics") states what a machine crash within it loses.
const lazySyncDelay = 50 * time.Millisecond

// lazySync schedules the disk syncs of lazy commits: one timer at a time, started by the first
// lazy commit after the previous lazy sync began.
type lazySync struct {
	// pending: a timer is set and its sync has not begun.
	pending atomic.Bool
	// delay, when set (tests), replaces lazySyncDelay.
	delay time.Duration
}

// A lazy ledger write (a hold, the end of a hold not bound to a task; see badger_ledger_ops.go)
// is acknowledged once its batch is committed: Badger has written it to its memtable's log, a
// file mapped into memory whose pages the kernel keeps (and writes out) when the process dies,
// so that a SIGKILL loses nothing. A disk sync starts within lazySyncDelay (or sooner, with the
// next durable commit, whose sync covers every earlier commit), so that a machine crash loses
// at most the lazy writes of that time. Ledger values are small: none reaches Badger's value
// log, which a lazy sync leaves alone.

// commitLazy is commitSerial without waiting for the disk sync: it returns once Badger has
// written the commit to its memtable's log (a SIGKILL loses nothing, as for the ledger's lazy
// writes above), and a disk sync starts within lazySyncDelay. The watcher's batches of upstream
// answers that set nothing off use it (badger_tasks.go): lost in a machine crash, such a batch
// is read again from the upstream.
func (b *Badger) commitLazy(ctx context.Context, fn func(txn *badger.Txn) error, serial sync.Locker) error {
	err := b.commitSerial(ctx, fn, false, serial)
	if err == nil {
		b.syncSoon()
	}
	return err
}

// syncSoon makes sure that a disk sync starts at most lazySyncDelay from now.
func (b *Badger) syncSoon() {
	if !b.lazy.pending.CompareAndSwap(false, true) {
		return // a sync is due and has not begun: it covers this commit too
	}
	d := b.lazy.delay
	if d <= 0 {
		d = lazySyncDelay
	}
	time.AfterFunc(d, b.syncLazy)
}

// syncLazy syncs every commit made so far, through the group sync that durable commits share.
// A store that is closing needs none: Close writes the memtables out to synced tables.
func (b *Badger) syncLazy() {
	// Cleared before the sync begins, so that a lazy commit made from now on sets a timer of
	// its own, and one made before is covered by this sync.
	b.lazy.pending.Store(false)
	if err := b.syncCommitted(); err != nil {
		b.counters.logger.Error("the disk sync of ledger writes failed; they reach the disk with a later sync",
			zap.Error(err))
	}
}

// syncCommitted returns once a disk sync that began after the call has ended: every commit
// made before it (a lazy one too) is then on disk. In a store that is closing it returns at
// once: Close writes the memtables out to synced tables. A failed sync answers an
// unsyncedError, as for a durable commit.
func (b *Badger) syncCommitted() error { return b.syncSince(false) }

// syncSince is syncCommitted, of Badger's value log too when valueLog is set: for a commit made
// without waiting for a sync that wrote a value to the value log (commitSerial).
func (b *Badger) syncSince(valueLog bool) error {
	if !b.commits.enter() {
		return nil
	}
	defer b.commits.leave()
	if err := b.sync.wait(b.sync.end(valueLog)); err != nil {
		return &unsyncedError{err}
	}
	return nil
}
