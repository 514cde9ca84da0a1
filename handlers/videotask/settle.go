package videotask

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// verdict is how the gateway itself ends a task it can no longer follow: the status the task
// takes, and the error its answer carries.
type verdict struct {
	status, code, message string
	// logged is the line written when this call ended the task, with fields.
	logged string
	fields []zap.Field
}

// settle finishes an unfinished task with the verdict, once (compare-and-set). Whoever wins the
// change ends the hold, releases the slot and queues the callback (finishEffects); a task
// already finished is left as it is.
func (h *Handler) settle(ctx context.Context, t storage.Task, v verdict) (storage.Task, error) {
	var finished, notify bool
	stored, err := storage.UpdateTask(ctx, h.Store, t.ID, func(cur *storage.Task) error {
		finished, notify = false, false
		if cur.Finished || storage.Terminal(cur.Status) {
			return storage.ErrNoChange
		}
		cur.Status, cur.UpdatedAt, cur.RefreshedAt = v.status, h.now().Unix(), h.now().UnixNano()
		result := recordResult(*cur)
		result["error"] = mustJSON(map[string]string{"code": v.code, "message": v.message})
		cur.Result = mustJSON(result)
		notify = h.markNotified(cur)
		finished = h.markFinished(cur, notify)
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return t, errTaskNotExist
	}
	if err != nil {
		h.Logger.Error("ending a task the gateway can no longer follow", zap.String("task_id", t.ID), zap.String("status", v.status), zap.Error(err))
		return t, err
	}
	if finished {
		h.Logger.Info(v.logged, append([]zap.Field{zap.String("task_id", t.ID)}, v.fields...)...)
		h.finishEffects(ctx, stored) // the callback with them
	} else if notify {
		h.notify(ctx, stored)
	}
	if len(stored.Result) == 0 {
		stored.Result = recordJSON(stored) // a record finished before it had an answer
	}
	return stored, nil
}
