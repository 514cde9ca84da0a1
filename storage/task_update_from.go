package storage

import (
	"context"
	"errors"
	"slices"
)

// UpdateTaskFrom is UpdateTask starting from cur, a record of the task read before (in a batch,
// say): it applies change to cur and stores the result by compare-and-set on cur's Version,
// which saves a read when cur is still current. After a conflict it goes on as UpdateTask, from
// a fresh read.
func UpdateTaskFrom(ctx context.Context, s Tasks, cur Task, change func(*Task) error) (Task, error) {
	stored, err := replaceFrom(ctx, s, cur, change)
	if !errors.Is(err, ErrConflict) {
		return stored, err
	}
	if ctx.Err() != nil {
		return cur, ctx.Err()
	}
	return UpdateTask(ctx, s, cur.ID, change)
}

// UpdateTasksFrom is UpdateTaskFrom for several records read before (a batch), stored together
// through ReplaceTasks: change(i, t) applies the change of curs[i]. It answers, in the order of
// curs, each stored record (curs[i] itself when its change returned ErrNoChange) or its error. A
// task whose record changed since it was read goes on as UpdateTask, from a fresh read, without
// holding up the others; so change(i, …) may run more than once, and the decision of its last
// run is the one stored, as with UpdateTask.
func UpdateTasksFrom(ctx context.Context, s Tasks, curs []Task, change func(i int, t *Task) error) ([]Task, []error) {
	return UpdateTasksFromLazily(ctx, s, curs, change, nil)
}

// UpdateTasksFromLazily is UpdateTasksFrom that writes the batch lazily (see WithLazySync) when
// every change in it may be lost in a machine crash: mayLose(i), asked right after change(i, …)
// returned nil, tells that the change of curs[i] sets off nothing (no refund, no slot release,
// no callback) and that the next read of the task makes it again. A batch with any other change
// is written durably as a whole, in one write as before: its disk sync is needed anyway, and
// covers the rest. A change retried after a conflict is stored durably.
func UpdateTasksFromLazily(ctx context.Context, s Tasks, curs []Task, change func(i int, t *Task) error, mayLose func(i int) bool) ([]Task, []error) {
	stored, errs := make([]Task, len(curs)), make([]error, len(curs))
	// Room for every change: a Task is some 400 bytes, and a slice grown from empty would copy a
	// batch of them several times over.
	next := make([]Task, 0, len(curs))
	at := make([]int, 0, len(curs)) // the index in curs of each task in next
	lazy := mayLose != nil
	for i, cur := range curs {
		t := cur
		t.Result = slices.Clone(cur.Result)
		switch err := change(i, &t); {
		case errors.Is(err, ErrNoChange):
			stored[i] = cur
		case err != nil:
			stored[i], errs[i] = cur, err
		default:
			next = append(next, t)
			at = append(at, i)
			lazy = lazy && mayLose(i)
		}
	}
	if len(next) == 0 {
		return stored, errs
	}
	writeCtx := ctx
	if lazy {
		writeCtx = WithLazySync(ctx)
	}
	replaced, failed := s.ReplaceTasks(writeCtx, next)
	for j, i := range at {
		stored[i], errs[i] = replaced[j], failed[j]
		if !errors.Is(failed[j], ErrConflict) {
			continue
		}
		if ctx.Err() != nil {
			stored[i], errs[i] = curs[i], ctx.Err()
			continue
		}
		stored[i], errs[i] = UpdateTask(ctx, s, curs[i].ID, func(t *Task) error { return change(i, t) })
	}
	return stored, errs
}

// lazySyncKey marks a context made by WithLazySync.
type lazySyncKey struct{}

// WithLazySync returns a context with which a task write (ReplaceTasks) returns without waiting
// for a disk sync on a backend that waits for one (Badger): the write survives the death of the
// process (SIGKILL), and a disk sync follows within 50 ms or with the next durable write, so
// that a machine crash may lose the writes of its last 50 ms. Only for writes whose loss costs a
// repeat and nothing else: the watcher's store of an upstream answer that sets nothing off.
// Redis writes as it always does (its durability is the server's appendfsync).
func WithLazySync(ctx context.Context) context.Context {
	return context.WithValue(ctx, lazySyncKey{}, true)
}

// IsLazySync reports whether ctx was made by WithLazySync: for a backend, or a wrapper of one,
// that tells such writes apart.
func IsLazySync(ctx context.Context) bool {
	lazy, _ := ctx.Value(lazySyncKey{}).(bool)
	return lazy
}
