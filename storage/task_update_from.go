package storage

import (
	"context"
	"errors"
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
