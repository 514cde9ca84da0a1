package storage

import (
	"context"
	"errors"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// A task write whose disk sync fails is taken back, as on Redis when too few replicas confirm
// it: Badger has already committed it, and without the take-back it would reach the disk with
// a later sync while its caller, told it failed, undid its side effects (a create) or never ran
// them (a change to Finished or Notified). The take-back is a compare-and-set: a change made
// since by someone else stands.

// takeBackCreate deletes the record of a create whose sync failed (err), if it is still the one
// written, and returns err; a record changed meanwhile (a watcher took it on) stands, and the
// create is acknowledged, as the record is live and followed.
//
// The hold the create bound (Task.HoldID) is unbound in the same transaction: the caller
// releases it, and should the process die first, the reconciler does at its deadline; left
// bound to a task that no longer exists, no one would.
func (b *Badger) takeBackCreate(ctx context.Context, task Task, err error) (Task, error) {
	derr := b.update(context.WithoutCancel(ctx), func(txn *badger.Txn) error {
		if err := txnDeleteTask(txn, task.ID, task.Version); err != nil {
			return err
		}
		if task.HoldID == "" {
			return nil
		}
		return unbindTaskHold(txn, task.HoldID, task.ID)
	})
	switch {
	case errors.Is(derr, ErrConflict):
		b.counters.logger.Warn("a task create whose disk sync failed was already changed meanwhile; kept",
			zap.String("task_id", task.ID), zap.Error(err))
		return task, nil
	case derr != nil && !isUnsynced(derr): // an unsynced delete is made; it reaches disk in log order
		b.counters.logger.Error("taking back a task create whose disk sync failed failed too",
			zap.String("task_id", task.ID), zap.NamedError("sync_error", err), zap.Error(derr))
	}
	return Task{}, err
}

// restoreTask puts back prevRecord, the record that changed replaced in a change whose sync
// failed (err), as a new version, if changed is still the stored record: whoever retries the
// change then makes it again, side effects and all. A change made since stands.
func (b *Badger) restoreTask(ctx context.Context, changed Task, prevRecord []byte, err error) {
	prev, jerr := decodeTaskRecord(changed.ID, prevRecord)
	if jerr != nil {
		b.counters.logger.Error("taking back a task change whose disk sync failed: the replaced record does not decode",
			zap.String("task_id", changed.ID), zap.NamedError("sync_error", err), zap.Error(jerr))
		return
	}
	prev.Version = changed.Version + 1
	rerr := b.update(context.WithoutCancel(ctx), func(txn *badger.Txn) error {
		cur, err := txnGetTaskHead(txn, changed.ID)
		if err != nil {
			return err
		}
		if cur.Version != changed.Version {
			return ErrConflict
		}
		return b.putTask(txn, prev, &changed)
	})
	switch {
	case errors.Is(rerr, ErrConflict), errors.Is(rerr, ErrNotFound):
		b.counters.logger.Error("taking back a task change whose disk sync failed: the record changed meanwhile; that change stands",
			zap.String("task_id", changed.ID), zap.Error(err))
	case rerr != nil && !isUnsynced(rerr): // an unsynced restore is made; it reaches disk in log order
		b.counters.logger.Error("taking back a task change whose disk sync failed failed too",
			zap.String("task_id", changed.ID), zap.NamedError("sync_error", err), zap.Error(rerr))
	}
}
