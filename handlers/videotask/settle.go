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
	// won, when set, is done once, by the caller whose compare-and-set ended the task (a side
	// effect at the provider, such as a cancel, that no other racer sends), before the task's
	// hold is ended: it reports whether the hold is charged its estimate (the provider may still
	// make the task, and bill it) rather than released.
	won func() (charge bool)
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
		if finished && v.won != nil && cur.Effects&storage.EffectHold != 0 {
			// Charged unless the winner's won decides otherwise (releaseDecided): a sweep
			// that does the effects of a winner that died before deciding charges the estimate.
			cur.Effects |= storage.EffectChargeEstimate
		}
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
		if v.won != nil && !charge {
			stored = h.releaseDecided(ctx, stored)
		}
		h.finishEffects(ctx, stored) // the callback with them
	} else if notify {
		h.notify(ctx, stored)
	}
	if len(stored.Result) == 0 {
		stored.Result = recordJSON(stored) // a record finished before it had an answer
	}
	return stored, nil
}

// releaseDecided records in t's record that its finish's hold is released after all (its
// verdict's won said so), clearing EffectChargeEstimate by compare-and-set before the effects are
// done. When that write fails the effects are done from t as decided, and a sweep that meets the
// hold already ended leaves it so.
func (h *Handler) releaseDecided(ctx context.Context, t storage.Task) storage.Task {
	stored, err := storage.UpdateTask(context.WithoutCancel(ctx), h.Store, t.ID, func(cur *storage.Task) error {
		if cur.Effects&storage.EffectChargeEstimate == 0 {
			return storage.ErrNoChange
		}
		cur.Effects &^= storage.EffectChargeEstimate
		return nil
	})
	if err != nil {
		h.Logger.Error("recording that a task's hold is released", zap.String("task_id", t.ID), zap.Error(err))
		t.Effects &^= storage.EffectChargeEstimate
		return t
	}
	return stored
}
