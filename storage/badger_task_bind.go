package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// The create of a task that carries a hold (Task.HoldID): the task's record and the binding of
// its hold are one operation of the ledger (badger_ledger_ops.go), decided in the book under the
// hold's account lock and written by the ledger's group commit (badger_book_batch.go) in one
// Badger transaction, then synced to disk before the create is acknowledged. The hold is taken
// from the book, as it stands after every decision made before, so that the binding needs no
// read of Badger and cannot interleave with another change of the hold: an end decided before
// it is written before it (and the create then leaves the hold alone), one decided after it
// sees the hold bound. A crash keeps both or neither: a hold is never bound to a task that was
// not written, and a task written with its hold is never on the reconciler's list.
//
// Task records are written by CreateTask, ReplaceTask(s) and restoreTask. The ledger's batch
// writes without Badger's conflict check, so a create checks that the record does not exist
// while it holds the task ID's claim (taskCreates), which every CreateTask of this process
// takes; the others change records that exist, and Badger serves one process. The claim's
// filter of the ids with a record (badger_task_ids.go) answers most of those checks without a
// read of Badger.

// maxBatchedTaskRecord bounds the record of a task whose create joins the ledger's batch; a
// larger one is created in a transaction of its own (createInTxn). A batch holds at most
// maxBatchWrites (4,096) writes, and such a create makes at least five (the record, the
// task's two index entries, the hold's record and its ledger entry), so that its tasks' records
// take at most 4,096 / 5 × memTableSize / 8,192, about 10 % of a memtable (4 KiB each, 3.2 MiB,
// with 32 MiB memtables): with the ledger's own small writes, below the 15 % of a memtable past
// which Badger refuses a transaction.
const maxBatchedTaskRecord = memTableSize / 8192

// How createBound's write went: written, or left to createInTxn with or without the binding.
const (
	boundWritten = iota
	boundInTxn
	boundNot
)

// createBound creates the task and binds its hold in one ledger operation (see above), or in
// createInTxn's transaction of its own a record too large for the batch (a transient hold is
// recorded first, on the reconciler's list, for that transaction to find). A hold that is
// unknown, ended, bound already or another account's than the task's is left alone (BindHold
// then tells the caller what it found).
//
// The operation is a durable commit of the group sync (badger_sync.go), as commitSerial's
// transactions are: the creates that commit while a sync runs share the next one.
func (b *Badger) createBound(ctx context.Context, task Task, mayExist bool) (Task, error) {
	writes, err := b.taskWrites(make([]bookWrite, 0, 4), task, nil)
	if err != nil {
		return Task{}, err
	}
	if !b.commits.enter() {
		return Task{}, badger.ErrDBClosed
	}
	how, err := b.writeBound(task, writes, mayExist)
	covering := b.sync.end(false)
	if err != nil || how != boundWritten {
		b.commits.leave()
		if err != nil {
			return Task{}, err
		}
		return b.createInTxn(ctx, task, mayExist, how == boundInTxn, writes)
	}
	err = b.sync.wait(covering)
	b.commits.leave()
	if err != nil {
		return b.takeBackBound(ctx, task, &unsyncedError{err})
	}
	return task, nil
}

// writeBound writes the task's record and binds its hold, or tells createBound how to create
// the task instead. It reads whether the record exists only when the task id's claim reported
// that it may (mayExist).
func (b *Badger) writeBound(task Task, writes []bookWrite, mayExist bool) (int, error) {
	large := len(writes[0].val) > maxBatchedTaskRecord
	if !large && mayExist {
		if err := b.taskAbsent(task.ID); err != nil {
			return 0, err
		}
	}
	a, h, err := b.lockHold(task.HoldID)
	if errors.Is(err, ErrNotFound) {
		return boundNot, nil
	}
	if err != nil {
		return 0, err
	}
	if !bindableTo(h.rec.Hold, task.Account) {
		a.mu.Unlock()
		return boundNot, nil
	}
	if large {
		return boundInTxn, b.recordForCreate(a, h)
	}
	before := h.rec
	op, err := b.bindOp(a, h, task.ID, len(writes))
	if err != nil {
		a.mu.Unlock()
		return 0, err
	}
	op.writes = append(op.writes, writes...)
	if err := b.writeHoldChange(a, h, &op); err != nil {
		// Not written: the book reads the account again from Badger, which has a recorded
		// hold as it was; a transient one, which only memory had, is taken again.
		if before.Hold.Transient {
			b.holdAgain(before)
		}
		return 0, err
	}
	return boundWritten, nil
}

// recordForCreate records h, a hold of the account a (locked), if it is transient: unbound, on
// the reconciler's list, for createInTxn to bind. It unlocks a. A hold whose record's batch
// fails is taken again in memory (holdAgain), as writeBound does.
func (b *Badger) recordForCreate(a *bookAccount, h *bookHold) error {
	if !h.rec.Hold.Transient {
		a.mu.Unlock()
		return nil
	}
	before := h.rec
	op, err := b.bindOp(a, h, "", 0)
	if err != nil {
		a.mu.Unlock()
		return err
	}
	op.lazy = true // the create's sync covers it
	if err := b.writeHoldChange(a, h, &op); err != nil {
		b.holdAgain(before)
		return err
	}
	return nil
}

// holdAgain takes again, in memory, the transient hold before that a create's (or a BindHold's)
// failed batch was to record: the caller still ends it (a task whose record could not be
// written is cancelled upstream, released when the cancel is confirmed and charged otherwise).
// It is taken whatever the account and the key's budget now leave: a request that locked the
// account between the failure and this call was given what the hold held, and the account may
// then hold more than its balance until the two end (decideHold).
func (b *Badger) holdAgain(before holdRecord) {
	h := before.Hold
	h.NewID, h.State = true, ""
	a, err := b.ledger.lockAccount(b.db, h.Account)
	if err == nil {
		var batch *ledgerBatch
		var other string
		_, _, batch, other, err = b.decideHold(a, h, h.Created, true)
		a.mu.Unlock()
		switch {
		case err == nil && other != "":
			err = fmt.Errorf("ledger: account %s has a hold with its id", other)
		case err == nil && batch != nil:
			err = b.waitBatch(batch)
		}
	}
	if err != nil {
		b.counters.logger.Error("a transient hold whose recording failed could not be taken again; it is lost as released",
			zap.String("hold_id", h.ID), zap.String("account", h.Account), zap.Error(err))
	}
}

// taskAbsent answers ErrExists when Badger has a record of the task id.
func (b *Badger) taskAbsent(id string) error {
	return b.db.View(func(txn *badger.Txn) error { return txnTaskAbsent(txn, id) })
}

// txnTaskAbsent answers ErrExists when txn sees a record of the task id.
func txnTaskAbsent(txn *badger.Txn, id string) error {
	_, err := txn.Get([]byte(prefixTask + id))
	switch {
	case err == nil:
		return ErrExists
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil
	}
	return err
}

// takeBackBound takes back a create that createBound wrote and whose disk sync failed (err), as
// takeBackCreate does, with the hold's account locked, so that the book and Badger agree on the
// hold when it is unbound again.
func (b *Badger) takeBackBound(ctx context.Context, task Task, err error) (Task, error) {
	a, h, lerr := b.lockHold(task.HoldID)
	if lerr != nil {
		// Not readable now: the record stays (a watcher follows it and its finish ends the
		// hold), and the create is acknowledged as takeBackCreate does with a record kept.
		b.counters.logger.Error("taking back a task create whose disk sync failed: its hold cannot be read; the task is kept",
			zap.String("task_id", task.ID), zap.NamedError("sync_error", err), zap.Error(lerr))
		return task, nil
	}
	defer a.mu.Unlock()
	stored, err := b.takeBackCreate(ctx, task, err)
	if err == nil || !h.current() {
		return stored, err // kept; or the account is read again from Badger before its next use
	}
	var rec holdRecord
	if rerr := b.db.View(func(txn *badger.Txn) error { return txnHold(txn, task.HoldID, &rec) }); rerr != nil {
		// The book keeps it bound: its end then waits for a sync and leaves the open-hold
		// key, which the reconciler finds and gets ErrHoldEnded for. Nothing is lost.
		b.counters.logger.Error("taking back a task create whose disk sync failed: its hold cannot be read back",
			zap.String("task_id", task.ID), zap.String("hold_id", task.HoldID), zap.Error(rerr))
	} else if !rec.Hold.Bound {
		h.rec.Hold.Bound = false // as unbindTaskHold left it in Badger
	}
	return stored, err
}

// forgetBound drops from memory h, a hold bound to the task taskID whose latest change is
// committed (BindHold calls it; the task's create calls BindHold once it has bound the hold).
// Nothing needs it there until the task's end, maybe hours later, which reads it back from
// Badger (lockedHold); kept, it would hold itself and the batch that wrote it (the task's record
// among its writes) in the heap the collector scans, for every open task.
func (k *ledgerBook) forgetBound(h *bookHold, taskID string) {
	a := h.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	id := h.rec.Hold.ID
	if a.holds[id] != h || !h.current() || h.rec.Hold.State != HoldOpen || !h.rec.Hold.Bound ||
		h.rec.Hold.Ref != taskID || !committed(h.batch) {
		return
	}
	delete(a.holds, id)
	k.holds.CompareAndDelete(id, h)
}

// committed reports whether batch (nil: none) was committed.
func committed(batch *ledgerBatch) bool {
	if batch == nil {
		return true
	}
	select {
	case <-batch.done:
		return batch.err == nil
	default:
		return false
	}
}
