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
	next := cur
	next.Result = slices.Clone(cur.Result)
	if err := change(&next); errors.Is(err, ErrNoChange) {
		return cur, nil
	} else if err != nil {
		return cur, err
	}
	stored, err := s.ReplaceTask(ctx, next)
	if !errors.Is(err, ErrConflict) {
		return stored, err
	}
	if ctx.Err() != nil {
		return cur, ctx.Err()
	}
	return UpdateTask(ctx, s, cur.ID, change)
}
