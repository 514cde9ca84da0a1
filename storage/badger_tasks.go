package storage

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func (b *Badger) CreateTask(ctx context.Context, task Task) (Task, error) {
	task.Version = 1
	task.markFinished(b.now())
	mayExist := b.creates.claim(task.ID)
	defer b.creates.release(task.ID)
	if task.HoldID != "" {
		return b.createBound(ctx, task, mayExist)
	}
	return b.createInTxn(ctx, task, mayExist, false, nil)
}

// createInTxn writes the record of a new task in a transaction of its own, which, with bind,
// also binds the task's hold (bindTaskHold): the create of a task without a hold, and those
// that createBound leaves to it. writes are the task's writes (taskWrites) when the caller made
// them already, else nil. The record's absence is read only when the task id's claim reported
// that it may exist (taskCreates.claim).
func (b *Badger) createInTxn(ctx context.Context, task Task, mayExist, bind bool, writes []bookWrite) (Task, error) {
	var holdAccount string // set when this create bound the task's hold
	err := b.update(ctx, func(txn *badger.Txn) error {
		holdAccount = ""
		if mayExist {
			if err := txnTaskAbsent(txn, task.ID); err != nil {
				return err
			}
		}
		if bind {
			var err error
			if holdAccount, err = bindTaskHold(txn, task.HoldID, task.ID, task.Account); err != nil {
				return err
			}
		}
		if writes != nil {
			return setWrites(txn, writes)
		}
		return b.putTask(txn, task, nil)
	})
	if isUnsynced(err) {
		return b.takeBackCreate(ctx, task, err)
	}
	if err != nil {
		return Task{}, err
	}
	if holdAccount != "" {
		b.ledger.boundAtCreate(task.HoldID, holdAccount, task.ID)
	}
	return task, nil
}

func (b *Badger) ReplaceTask(ctx context.Context, task Task) (Task, error) {
	var stored Task
	var prevRecord []byte
	err := b.update(ctx, func(txn *badger.Txn) error {
		stored = task // from the caller's record again when Badger runs this again
		prev, err := compareTask(txn, &stored, &prevRecord, b.now())
		if err != nil {
			return err
		}
		return b.putTask(txn, stored, &prev)
	})
	if isUnsynced(err) {
		b.restoreTask(ctx, stored, prevRecord, err)
	}
	if err != nil {
		return Task{}, err
	}
	return stored, nil
}

// ReplaceTasks compares and stores every task in one transaction, with one commit and one disk
// sync (none waited for with a WithLazySync context: commitLazy). A task whose record conflicts,
// is missing or cannot be read is left out of the transaction; the others are written. A batch
// too big for one transaction is split in halves.
func (b *Badger) ReplaceTasks(ctx context.Context, tasks []Task) ([]Task, []error) {
	stored, errs := make([]Task, len(tasks)), make([]error, len(tasks))
	prevRecords := make([][]byte, len(tasks))
	commit := b.update
	if IsLazySync(ctx) {
		commit = func(ctx context.Context, fn func(txn *badger.Txn) error) error { return b.commitLazy(ctx, fn, nil) }
	}
	err := commit(ctx, func(txn *badger.Txn) error {
		writes := 0
		for i, task := range tasks { // a copy of the caller's record on every run
			prev, err := compareTask(txn, &task, &prevRecords[i], b.now())
			stored[i], errs[i] = Task{}, err
			if err != nil {
				continue // this task's failure alone
			}
			if err := b.putTask(txn, task, &prev); err != nil {
				return err // the transaction cannot go on (too big, or a store failure)
			}
			stored[i] = task
			writes++
		}
		if writes == 0 {
			return errNothingToWrite
		}
		return nil
	})
	if errors.Is(err, badger.ErrTxnTooBig) && len(tasks) > 1 {
		half := len(tasks) / 2
		s1, e1 := b.ReplaceTasks(ctx, tasks[:half])
		s2, e2 := b.ReplaceTasks(ctx, tasks[half:])
		return append(s1, s2...), append(e1, e2...)
	}
	if isUnsynced(err) {
		for i := range tasks {
			if errs[i] == nil {
				b.restoreTask(ctx, stored[i], prevRecords[i], err)
			}
		}
	}
	if err != nil {
		for i := range tasks {
			stored[i], errs[i] = Task{}, err
		}
	}
	return stored, errs
}

// compareTask is the compare of a compare-and-set inside txn: it checks that the stored record
// of task has task's Version, and makes task the record to store (the next Version; the
// account, kind and creation time of the stored record, which never change). It returns the
// stored record's head (taskHead: only as much of the record as the compare and the index
// entries need is decoded), and keeps the stored record in *record, for a take-back.
func compareTask(txn *badger.Txn, task *Task, record *[]byte, now time.Time) (Task, error) {
	var cur taskHead
	item, err := txn.Get([]byte(prefixTask + task.ID))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Task{}, ErrNotFound
	}
	if err != nil {
		return Task{}, err
	}
	if err := item.Value(func(val []byte) error {
		*record = append((*record)[:0], val...)
		var err error
		cur, err = decodeTaskHead(val)
		return err
	}); err != nil {
		return Task{}, err
	}
	if cur.Version != task.Version || !sameTask(task, cur.Account, cur.CreatedAt) {
		return Task{}, ErrConflict
	}
	prev := cur.task()
	task.Account, task.Kind, task.CreatedAt = prev.Account, prev.Kind, prev.CreatedAt
	task.Version++
	task.markFinished(now)
	return prev, nil
}

// putTask writes a task record and its index entries (taskWrites) in txn.
func (b *Badger) putTask(txn *badger.Txn, task Task, prev *Task) error {
	var buf [4]bookWrite
	writes, err := b.taskWrites(buf[:0], task, prev)
	if err != nil {
		return err
	}
	return setWrites(txn, writes)
}

// setWrites sets writes in txn.
func setWrites(txn *badger.Txn, writes []bookWrite) error {
	for _, w := range writes {
		var err error
		if w.del {
			err = txn.Delete([]byte(w.key))
		} else {
			err = setEntry(txn, w.key, w.val, w.ttl)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// taskWrites appends to dst the writes of a task record and its index entries, all expiring with
// the record. prev is the record it replaces, if any: index entries that prev wrote just so (the
// task was and stays unfinished, with the same expiry: the watcher's refreshes) are not written
// again. A create (prev nil) of a record that is finished from the start (an image, an owned
// file) writes no deletion of the open-task marker: with no record there is no marker (the two
// are written, deleted and expire together), and a deletion would still be an entry in the log,
// the memtable and a table until compaction drops it. The record's write comes first.
//
// A new task record's key (a create's) must be written only under the create's claim of its id
// (taskCreates, badger_task_ids.go): the in-memory id filter that lets a create skip its
// existence read knows only the ids claimed in this process and found by its scans, so a task
// key written any other way (an import, an upsert) would let another account's create of the
// same id overwrite it.
func (b *Badger) taskWrites(dst []bookWrite, task Task, prev *Task) ([]bookWrite, error) {
	expiry := task.Expiry()
	ttl := max(expiry.Sub(b.now()), minTaskRecordTTL)
	record, err := encodeTaskRecord(&task)
	if err != nil {
		return dst, err
	}
	dst = append(dst, bookWrite{key: prefixTask + task.ID, val: record, ttl: ttl})
	if prev == nil && indexedByIdempotencyKey(task) {
		dst = append(dst, bookWrite{key: prefixKeyedTask + task.IdempotencyKey, val: []byte(task.ID), ttl: ttl})
	}
	if prev != nil && prev.Watched() && task.Watched() && prev.Expiry().Equal(expiry) && ttl > minTaskRecordTTL {
		return dst, nil // the index key (account, creation time, id) never changes
	}
	if task.Watched() {
		dst = append(dst, bookWrite{key: prefixOpenTask + task.ID, ttl: ttl})
	} else if prev != nil {
		dst = append(dst, bookWrite{key: prefixOpenTask + task.ID, del: true})
	}
	return append(dst, bookWrite{key: string(taskIndexKey(task)), ttl: ttl}), nil
}

func (b *Badger) Task(_ context.Context, id string) (Task, error) {
	var t Task
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		t, err = txnGetTask(txn, id)
		return err
	})
	return t, err
}

// txnGetTask reads the record of a task id in txn, or answers ErrNotFound.
func txnGetTask(txn *badger.Txn, id string) (Task, error) {
	return txnDecodeTask(txn, id, decodeTaskRecord)
}

// txnGetTaskHead reads the head of the record of a task id in txn, or answers ErrNotFound.
func txnGetTaskHead(txn *badger.Txn, id string) (taskHead, error) {
	return txnDecodeTask(txn, id, func(_ string, b []byte) (taskHead, error) { return decodeTaskHead(b) })
}

// txnDecodeTask reads the record of a task id in txn with decode, or answers ErrNotFound.
func txnDecodeTask[T any](txn *badger.Txn, id string, decode func(id string, record []byte) (T, error)) (T, error) {
	var t T
	item, err := txn.Get([]byte(prefixTask + id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return t, ErrNotFound
	}
	if err != nil {
		return t, err
	}
	err = item.Value(func(val []byte) error {
		var err error
		t, err = decode(id, val)
		return err
	})
	return t, err
}

func (b *Badger) DeleteTask(ctx context.Context, id string, version int64) error {
	return b.update(ctx, func(txn *badger.Txn) error { return txnDeleteTask(txn, id, version) })
}

// txnDeleteTask deletes the task's record and index keys if it is still of version; a task
// that is gone is left so, one of another version is ErrConflict.
func txnDeleteTask(txn *badger.Txn, id string, version int64) error {
	h, err := txnGetTaskHead(txn, id) // the index keys need only the head's account and creation time
	if errors.Is(err, ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if h.Version != version {
		return ErrConflict
	}
	t := h.task()
	t.ID = id
	for _, k := range [][]byte{[]byte(prefixTask + id), []byte(prefixOpenTask + id), taskIndexKey(t)} {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// ListTasks walks the account's index (creation time, then id) from the start or from the
// cursor's own entry, which it finds from the cursor task's record.
func (b *Badger) ListTasks(_ context.Context, account string, q TaskQuery) (TaskPage, error) {
	var page TaskPage
	q.PageNum, q.PageSize = max(q.PageNum, 1), max(q.PageSize, 1)
	skip := (q.PageNum - 1) * q.PageSize
	prefix := []byte(prefixTaskIndex + account + "\x00")
	err := b.db.View(func(txn *badger.Txn) error {
		start := append(bytes.Clone(prefix), 0xff)
		if q.Oldest {
			start = prefix
		}
		var cursor []byte // the After task's own entry, on the previous page
		if q.After != "" {
			after, err := txnGetTask(txn, q.After)
			if errors.Is(err, ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			if after.Account != account || !q.modelAllowed(after.Model) {
				return nil
			}
			cursor = taskIndexKey(after)
			start = cursor
		}
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Reverse = !q.Oldest
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
			key := it.Item().Key()
			if cursor != nil && bytes.Equal(key, cursor) {
				continue
			}
			t, err := txnGetTask(txn, string(key[len(prefix)+21:]))
			if errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if t.Account != account || !q.Matches(t) {
				continue
			}
			if page.Total >= skip && len(page.Tasks) < q.PageSize {
				page.Tasks = append(page.Tasks, t)
			}
			page.Total++
			if q.NoTotal && len(page.Tasks) == q.PageSize {
				break
			}
		}
		return nil
	})
	if q.NoTotal {
		page.Total = 0
	}
	return page, err
}

func (b *Badger) UnfinishedTasks(_ context.Context, fn func(id string) bool) error {
	err := b.db.View(func(txn *badger.Txn) error {
		return scanKeys(txn, prefixOpenTask, func(k []byte) error {
			if !fn(string(k[len(prefixOpenTask):])) {
				return errStop
			}
			return nil
		})
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

func (b *Badger) SetRelayToken(ctx context.Context, tokenHash, taskID string, ttl time.Duration) error {
	return b.update(ctx, func(txn *badger.Txn) error {
		return setEntry(txn, prefixRelay+tokenHash, []byte(taskID), ttl)
	})
}

func (b *Badger) RelayTask(_ context.Context, tokenHash string) (string, error) {
	var id []byte
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		id, err = txnGet(txn, prefixRelay+tokenHash)
		return err
	})
	return string(id), err
}

// TaskExpiresAt returns when the record of a task id expires (for the conformance suite).
func (b *Badger) TaskExpiresAt(_ context.Context, id string) (time.Time, error) {
	var at uint64
	err := b.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(prefixTask + id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		at = item.ExpiresAt()
		return nil
	})
	return time.Unix(int64(at), 0), err
}

// taskIndexKey orders one account's tasks by creation time.
// The key is prefix, account, a zero byte, the creation time as 20 decimal digits, "/" and the id.
func taskIndexKey(t Task) []byte {
	k := make([]byte, 0, len(prefixTaskIndex)+len(t.Account)+1+21+len(t.ID))
	k = append(append(append(k, prefixTaskIndex...), t.Account...), 0)
	return appendTaskCursor(k, t.CreatedAt, t.ID)
}

func (b *Badger) TaskOfIdempotencyKey(_ context.Context, key string) (Task, error) {
	var t Task
	err := b.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(prefixKeyedTask + key))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		id, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		t, err = txnGetTask(txn, string(id))
		return err
	})
	return keyedTask(t, err, key)
}
