package videotask

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/storage"
)

// verdict is how the gateway itself ends a task it can no longer follow: the status the task
// takes, and the error its answer carries.
type verdict struct {
	status, code, message string
	// logged is the line written when this call ended the task, with fields.
	logged string
	fields []zap.Field
	// won, when set, is done once, by the caller whose compare-and-set ended the task (a side
	// effect at the provider, such as a cancel, that no other racer sends), before the task's
	// hold is ended: it reports whether the hold is charged its estimate (the provider may still
	// make the task, and bill it) rather than released.
	won func() (charge bool)
}

// settle finishes an unfinished task with the verdict, once (compare-and-set). Whoever wins the
// change releases the slot, refunds and queues the callback; a task already finished is left
// as it is.
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
		finished = accounting.MarkFinished(cur)
		notify = h.markNotified(cur)
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
		charge := v.won != nil && v.won()
		fields := append([]zap.Field{zap.String("task_id", t.ID)}, v.fields...)
		h.Logger.Info(v.logged, append(fields, zap.Bool("charged_estimate", charge))...)
		if charge && h.Accounting != nil {
			h.Accounting.FinishedAtEstimate(ctx, stored, v.status)
		} else {
			h.finished(ctx, stored, v.status)
		}
	}
	if notify {
		h.notify(ctx, stored)
	}
	if len(stored.Result) == 0 {
		stored.Result = recordJSON(stored) // a record finished before it had an answer
	}
	return stored, nil
}
