package videotask

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/storage"
)

// maxOverdueGrace is how long past storage.MaxTaskRun (the longest execution_expires_after) a
// task that its upstream still calls unfinished is followed before the gateway expires it.
const maxOverdueGrace = 10 * time.Minute

// overdue reports whether an unfinished task has run past the longest time any task may run: its
// upstream should have expired it, and the gateway does so itself before the record's own expiry
// (CreatedAt + MaxTaskRun + retention), which would otherwise drop the task with its slot held
// and its cost never refunded.
func overdue(t storage.Task) bool {
	if !t.Unfinished() {
		return false
	}
	deadline := time.Unix(t.CreatedAt, 0).Add(storage.MaxTaskRun)
	grace := min(maxOverdueGrace, t.Expiry().Sub(deadline)/2)
	return now().After(deadline.Add(grace))
}

// expireOverdue finishes an overdue task as expired, once (compare-and-set), with a message that
// says why. Whoever wins the change releases the slot, refunds and queues the callback.
func (h *Handler) expireOverdue(ctx context.Context, t storage.Task) (storage.Task, error) {
	var finished, notify bool
	stored, err := storage.UpdateTask(ctx, h.Store, t.ID, func(cur *storage.Task) error {
		finished, notify = false, false
		if cur.Finished || storage.Terminal(cur.Status) {
			return storage.ErrNoChange
		}
		cur.Status, cur.UpdatedAt, cur.RefreshedAt = StatusExpired, now().Unix(), now().UnixNano()
		result := recordResult(*cur)
		result["error"] = mustJSON(map[string]string{
			"code":    "task_overdue",
			"message": "the task did not finish within the longest execution time (" + storage.MaxTaskRun.String() + ")",
		})
		cur.Result = mustJSON(result)
		finished = accounting.MarkFinished(cur)
		notify = h.markNotified(cur)
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return t, errTaskNotExist
	}
	if err != nil {
		h.Logger.Error("expiring an overdue task", zap.String("task_id", t.ID), zap.Error(err))
		return t, err
	}
	if finished {
		h.Logger.Info("task expired: it ran past the longest execution time", zap.String("task_id", t.ID), zap.String("last_status", t.Status))
		h.finished(ctx, stored, StatusExpired)
	}
	if notify {
		h.notify(ctx, stored)
	}
	return stored, nil
}
