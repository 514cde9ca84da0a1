package storage

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Key layout of tasks (after the prefix):
//
//	t:<id>          hash {v, j, a, k, c}: the record, its version and its immutable account,
//	                kind and creation time; expires with the record
//	ta:<account>    sorted set: the account's task ids by creation time (entries of expired
//	                records are dropped when a list finds them)
//	tc              sorted set: every task id by creation time, for the operator's search
//	                across accounts (entries of expired records are dropped by later creates
//	                and searches)
//	tu              set: the ids of unfinished tasks (entries of expired records are dropped when
//	                UnfinishedTasks finds them)
//	rt:<token hash> string: the task id of a relay token

// taskBatch is how many records one round trip reads when listing.
const taskBatch = 500

// expireAtMillis is when a task record is deleted, never less than a minute from now.
func (r *Redis) expireAtMillis(t Task) string {
	at := t.Expiry()
	if floor := r.now().Add(minTaskRecordTTL); at.Before(floor) {
		at = floor
	}
	return itoa(at.UnixMilli())
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (r *Redis) CreateTask(ctx context.Context, task Task) (Task, error) {
	task.Version = 1
	task.markFinished(r.now())
	js, err := marshalTask(&task)
	if err != nil {
		return Task{}, err
	}
	res, unconfirmed := r.execDurable(ctx, scriptCreateTask,
		[]string{r.key("t:", task.ID), r.key("tu"), r.key("ta:", task.Account), r.key("tc")},
		[]string{string(js), r.expireAtMillis(task), flag(task.Watched()), itoa(task.CreatedAt), task.ID, task.Account, task.Kind, r.prefix,
			r.keyedTaskEntry(task)})
	n, err := res.AsInt64()
	if err != nil {
		return Task{}, err
	}
	if n == 0 {
		return Task{}, ErrExists
	}
	if unconfirmed != nil {
		// The record is on the master alone: it is deleted, so that the caller's failure path
		// (cancel upstream, refund, release the slot) is the only outcome, with no record that the
		// watcher would finish and refund a second time.
		gone, err := r.takeBack(ctx, "task create", scriptDeleteTask, []string{r.key("t:", task.ID), r.key("tu")}, []string{"1", task.ID, r.prefix}).AsInt64()
		if err == nil && gone == 0 {
			// Another instance (a watcher) changed the record meanwhile: it is live and followed,
			// so it is acknowledged; failing now would refund a task that the watcher finishes
			// and refunds too.
			r.logger.Warn("a task create too few replicas confirmed was already changed by another instance; kept", zap.String("task_id", task.ID), errField(unconfirmed))
			return task, nil
		}
		return Task{}, unconfirmed
	}
	return task, nil
}

func (r *Redis) Task(ctx context.Context, id string) (Task, error) {
	v, js, err := r.readRecord(ctx, r.key("t:", id), false)
	if err != nil {
		return Task{}, err
	}
	return decodeTask(v, js)
}

func decodeTask(v int64, js []byte) (Task, error) {
	t, err := unmarshalTask(js)
	if err != nil {
		return Task{}, fmt.Errorf("redis store: decoding task record: %v", err)
	}
	t.Version = v
	return t, nil
}

func (r *Redis) ReplaceTask(ctx context.Context, task Task) (Task, error) {
	want := task.Version
	task.markFinished(r.now())
	// Two rounds at most: the second after taking the stored account, kind and creation time,
	// which never change.
	for range 2 {
		task.Version = want + 1
		js, err := marshalTask(&task)
		if err != nil {
			return Task{}, err
		}
		res, unconfirmed := r.execDurable(ctx, scriptReplaceTask,
			[]string{r.key("t:", task.ID), r.key("tu")},
			[]string{itoa(want), string(js), r.expireAtMillis(task), flag(task.Watched()), task.ID,
				task.Account, task.Kind, itoa(task.CreatedAt), flag(r.waitReplicas > 0)})
		vals, err := res.ToArray()
		if err != nil {
			return Task{}, err
		}
		if len(vals) == 0 {
			return Task{}, errScript
		}
		n, err := vals[0].AsInt64()
		if err != nil {
			return Task{}, err
		}
		switch n {
		case 1:
			if unconfirmed != nil {
				r.restoreTask(ctx, task, vals[1:])
				return Task{}, unconfirmed
			}
			return task, nil
		case 0:
			return Task{}, ErrConflict
		case -1:
			return Task{}, ErrNotFound
		case -2:
			if len(vals) != 4 {
				return Task{}, errScript
			}
			// The stored account, kind and creation time win, as they never change.
			var fields [3]string
			for i := range fields {
				if fields[i], err = vals[i+1].ToString(); err != nil {
					return Task{}, err
				}
			}
			created, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				return Task{}, errScript
			}
			if !sameTask(&task, fields[0], created) {
				return Task{}, ErrConflict
			}
			task.Account, task.Kind, task.CreatedAt = fields[0], fields[1], created
			continue
		}
		return Task{}, errScript
	}
	return Task{}, errScript
}

// ReplaceTasks runs ReplaceTask for every task at once: the client pipelines concurrent
// commands, so a batch goes in a round trip or a few (with wait_replicas, each write still waits
// for its own WAIT, on a connection of its own). Each task is compared and stored on its own.
func (r *Redis) ReplaceTasks(ctx context.Context, tasks []Task) ([]Task, []error) {
	stored, errs := make([]Task, len(tasks)), make([]error, len(tasks))
	var wg sync.WaitGroup
	for i, task := range tasks {
		wg.Go(func() { stored[i], errs[i] = r.ReplaceTask(ctx, task) })
	}
	wg.Wait()
	return stored, errs
}

// restoreTask puts back the record that a change too few replicas confirmed replaced (old, the
// script's answer after its status), as a new version, so that the change is made again by
// whoever retries it, side effects and all: the caller got an error, so it did none of them. A
// writer that changed the record since wins.
func (r *Redis) restoreTask(ctx context.Context, changed Task, old []rueidisMessage) {
	if len(old) != 1 {
		r.logger.Error("taking back a task change that too few replicas confirmed: no replaced record", zap.String("task_id", changed.ID))
		return
	}
	js, err := old[0].ToString()
	if err != nil {
		r.logger.Error("taking back a task change that too few replicas confirmed", zap.String("task_id", changed.ID), errField(err))
		return
	}
	prev, err := decodeTask(changed.Version, []byte(js))
	if err != nil {
		r.logger.Error("taking back a task change that too few replicas confirmed", zap.String("task_id", changed.ID), errField(err))
		return
	}
	prev.Version = changed.Version + 1
	restored, err := marshalTask(&prev)
	if err != nil {
		r.logger.Error("taking back a task change that too few replicas confirmed", zap.String("task_id", changed.ID), errField(err))
		return
	}
	res := r.takeBack(ctx, "task change", scriptReplaceTask, []string{r.key("t:", prev.ID), r.key("tu")},
		[]string{itoa(changed.Version), string(restored), r.expireAtMillis(prev), flag(prev.Watched()), prev.ID,
			changed.Account, changed.Kind, itoa(changed.CreatedAt), "0"})
	if vals, err := res.ToArray(); err == nil && len(vals) > 0 {
		if ok, err := vals[0].AsInt64(); err == nil && ok != 1 {
			// Another change came meanwhile and stands; the one that was not confirmed stays
			// under it on the master.
			r.logger.Error("taking back a task change that too few replicas confirmed: the record changed meanwhile", zap.String("task_id", changed.ID))
		}
	}
}

func (r *Redis) DeleteTask(ctx context.Context, id string, version int64) error {
	n, err := r.execInt(ctx, scriptDeleteTask,
		[]string{r.key("t:", id), r.key("tu")},
		[]string{itoa(version), id, r.prefix})
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrConflict
	}
	return nil
}

// ListTasks walks the account's index (see taskWalk) from the start or from the cursor, and
// reads the records in batches; the filters are applied to the records. Without a total it stops
// at the page's last task.
func (r *Redis) ListTasks(ctx context.Context, account string, q TaskQuery) (TaskPage, error) {
	var page TaskPage
	q.PageNum, q.PageSize = max(q.PageNum, 1), max(q.PageSize, 1)
	skip := (q.PageNum - 1) * q.PageSize
	want := make(map[string]bool, len(q.IDs))
	for _, id := range q.IDs {
		want[id] = true
	}
	var gone []string
	full := func() bool { return q.NoTotal && len(page.Tasks) == q.PageSize }
	take := func(id string, t Task, found bool) {
		switch {
		case full():
		case !found:
			gone = append(gone, id)
		case t.Account != account || !q.Matches(t):
		default:
			if page.Total >= skip && len(page.Tasks) < q.PageSize {
				page.Tasks = append(page.Tasks, t)
			}
			page.Total++
		}
	}
	walk, err := r.newTaskWalk(ctx, account, q.After, !q.Oldest, q.modelAllowed)
	if err != nil {
		return page, err
	}
	batch := taskBatch
	if q.NoTotal {
		batch = min(skip+q.PageSize, taskBatch)
	}
	for !full() {
		ids, err := walk.next(ctx, batch)
		if err != nil {
			return page, err
		}
		if len(ids) == 0 {
			break
		}
		if len(want) > 0 {
			ids = slices.DeleteFunc(ids, func(id string) bool { return !want[id] })
		}
		for len(ids) > 0 && !full() {
			n := len(ids)
			if q.NoTotal {
				n = min(n, skip+q.PageSize-page.Total) // what the page still needs, at most
			}
			if err := r.readTasks(ctx, ids[:n], take); err != nil {
				return page, err
			}
			ids = ids[n:]
		}
		batch = taskBatch
	}
	if q.NoTotal {
		page.Total = 0
	}
	if len(gone) > 0 {
		// Expired records leave their index entries behind; a failure here only delays that.
		if err := r.client.Do(ctx, r.client.B().Zrem().Key(r.key("ta:", account)).Member(gone...).Build()).Error(); err != nil {
			r.logger.Debug("dropping expired task index entries", errField(err))
		}
	}
	return page, nil
}

// readTasks reads records in batches, in order, and calls fn with each (found false when the
// record is gone).
func (r *Redis) readTasks(ctx context.Context, ids []string, fn func(id string, t Task, found bool)) error {
	for start := 0; start < len(ids); start += taskBatch {
		batch := ids[start:min(start+taskBatch, len(ids))]
		cmds := make([]rueidisCompleted, 0, len(batch))
		for _, id := range batch {
			cmds = append(cmds, r.client.B().Hmget().Key(r.key("t:", id)).Field("v", "j").Build())
		}
		for i, res := range r.client.DoMulti(ctx, cmds...) {
			vals, err := res.ToArray()
			if err != nil {
				return err
			}
			if len(vals) != 2 || vals[0].IsNil() {
				fn(batch[i], Task{}, false)
				continue
			}
			vs, err := vals[0].ToString()
			if err != nil {
				return err
			}
			v, err := strconv.ParseInt(vs, 10, 64)
			if err != nil {
				return fmt.Errorf("redis store: bad task version: %v", err)
			}
			js, err := vals[1].ToString()
			if err != nil {
				return err
			}
			t, err := decodeTask(v, []byte(js))
			if err != nil {
				return err
			}
			fn(batch[i], t, true)
		}
	}
	return nil
}

// UnfinishedTasks walks the set of unfinished task ids with SSCAN, dropping ids whose record
// has expired.
func (r *Redis) UnfinishedTasks(ctx context.Context, fn func(id string) bool) error {
	set := r.key("tu")
	var cursor uint64
	for {
		entry, err := r.client.Do(ctx, r.client.B().Sscan().Key(set).Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if len(entry.Elements) > 0 {
			cmds := make([]rueidisCompleted, 0, len(entry.Elements))
			for _, id := range entry.Elements {
				cmds = append(cmds, r.client.B().Exists().Key(r.key("t:", id)).Build())
			}
			var gone []string
			for i, res := range r.client.DoMulti(ctx, cmds...) {
				n, err := res.AsInt64()
				if err != nil {
					return err
				}
				if n == 0 {
					gone = append(gone, entry.Elements[i])
					continue
				}
				if !fn(entry.Elements[i]) {
					return nil
				}
			}
			if len(gone) > 0 {
				if err := r.client.Do(ctx, r.client.B().Srem().Key(set).Member(gone...).Build()).Error(); err != nil {
					return err
				}
			}
		}
		cursor = entry.Cursor
		if cursor == 0 {
			return nil
		}
	}
}

// TaskExpiresAt returns when the record of a task id expires (for the conformance suite).
func (r *Redis) TaskExpiresAt(ctx context.Context, id string) (time.Time, error) {
	ms, err := r.client.Do(ctx, r.client.B().Pttl().Key(r.key("t:", id)).Build()).AsInt64()
	if err != nil {
		return time.Time{}, err
	}
	if ms < 0 {
		return time.Time{}, ErrNotFound
	}
	return r.now().Add(time.Duration(ms) * time.Millisecond), nil
}

func (r *Redis) SetRelayToken(ctx context.Context, tokenHash, taskID string, ttl time.Duration) error {
	return r.client.Do(ctx, r.client.B().Set().Key(r.key("rt:", tokenHash)).Value(taskID).Px(max(ttl, time.Millisecond)).Build()).Error()
}

func (r *Redis) RelayTask(ctx context.Context, tokenHash string) (string, error) {
	id, err := r.client.Do(ctx, r.client.B().Get().Key(r.key("rt:", tokenHash)).Build()).ToString()
	if isNil(err) {
		return "", ErrNotFound
	}
	return id, err
}

// keyedTaskEntry is the name of the index entry of t's idempotency key that its create writes
// (TaskOfIdempotencyKey), or "" when it writes none.
func (r *Redis) keyedTaskEntry(t Task) string {
	if !indexedByIdempotencyKey(t) {
		return ""
	}
	return r.key("tk:", t.IdempotencyKey)
}

func (r *Redis) TaskOfIdempotencyKey(ctx context.Context, key string) (Task, error) {
	id, err := r.client.Do(ctx, r.client.B().Get().Key(r.key("tk:", key)).Build()).ToString()
	if isNil(err) {
		return Task{}, ErrNotFound
	}
	if err != nil {
		return Task{}, err
	}
	t, err := r.Task(ctx, id)
	return keyedTask(t, err, key)
}
