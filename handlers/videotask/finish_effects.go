package videotask

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/storage"
)

// A task's finish is one compare-and-set on its record (markFinished), which also records what
// the finish still has to do (storage.Task.Effects): end the task's hold, give its active-task
// slot back, queue its final callback. The winner of that change does them at once
// (finishEffects) and records them done by a second compare-and-set, which also clears Active:
// the slot goes back only through that change, once. When the winner cannot (its process dies,
// the store is unreachable for a moment, a reply is lost), the record keeps its effects and
// stays in the store's unfinished index: the watcher of the task's shard, on any instance, does
// them once they have been pending for finishEffectsGrace (watcher.go). Ending a hold already
// ended does nothing, and a callback event already queued is not queued twice, so a winner and
// a sweep that meet do each effect once.

// finishEffectsGrace is how long a finish's effects are left to the instance that won it before
// a watcher does them.
const finishEffectsGrace = 2 * time.Second

// markFinished is accounting.MarkFinished that also records the finish's effects in the record:
// ending the hold (when the gateway does billing) and queueing the final callback when notify
// (markNotified decided it in the same change). It reports whether this change finished the task.
func (h *Handler) markFinished(cur *storage.Task, notify bool) bool {
	if !accounting.MarkFinished(cur) {
		return false
	}
	cur.Effects = 0
	if h.Accounting != nil {
		cur.Effects |= storage.EffectHold
	}
	if notify {
		cur.Effects |= storage.EffectCallback
	}
	return true
}

// finishEffectsDue reports whether a watcher does the finish's effects of t now, or when they
// are due (finishEffectsGrace after the finish was stored).
func (h *Handler) finishEffectsDue(t storage.Task) (bool, time.Time) {
	due := time.Unix(t.FinishedAt, 0).Add(finishEffectsGrace)
	return !due.After(h.now()), due
}

// finishEffects does the effects that t's record says its finish still has to do, then records
// them done (clearing Effects and Active) by compare-and-set; the caller whose change cleared
// them gives the slot back and records the finish's usage. It reports false when an effect
// failed: the record keeps them, for a watcher to do later.
func (h *Handler) finishEffects(ctx context.Context, t storage.Task) bool {
	if t.Effects == 0 {
		return true
	}
	ctx = context.WithoutCancel(ctx)
	var ended accounting.EndedHold
	status := t.Status
	if t.Effects&storage.EffectDeleted != 0 {
		status = accounting.StatusDeleted
	}
	if h.Accounting != nil && t.Effects&storage.EffectHold != 0 {
		used, _ := TaskUsage(t) // nothing when it did not succeed: the hold is released
		var ok bool
		charge := t.Effects&storage.EffectChargeEstimate != 0 // decided in the finish's change
		if ended, ok = h.Accounting.EndTaskHold(ctx, t, status, used, charge); !ok {
			return false
		}
	}
	if t.Effects&storage.EffectCallback != 0 && h.Callbacks != nil && t.CallbackURL != "" && !t.CallbackGone {
		if err := h.Callbacks.Enqueue(ctx, h.callbackEvent(ctx, t)); err != nil {
			h.Logger.Error("queueing a finished task's callback; a watcher queues it again", zap.String("task_id", t.ID), zap.Error(err))
			return false
		}
	}
	cleared, active := false, false
	_, err := storage.UpdateTask(ctx, h.Store, t.ID, func(cur *storage.Task) error {
		cleared, active = false, false
		if cur.Effects == 0 {
			return storage.ErrNoChange
		}
		cleared, active = true, cur.Active
		cur.Effects, cur.Active = 0, false
		return nil
	})
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			h.Logger.Error("recording a finished task's effects done; a watcher does them again", zap.String("task_id", t.ID), zap.Error(err))
		}
		return false
	}
	if cleared && h.Accounting != nil {
		h.Accounting.TaskEnded(ctx, t, status, ended, active)
	}
	return true
}

// callbackEvent is the callback of t's current status: the query answer, exactly as the query
// endpoint returns it, under an id of the task and status (a change observed twice is queued
// once).
func (h *Handler) callbackEvent(ctx context.Context, t storage.Task) callbacks.Event {
	return callbacks.Event{ID: callbacks.EventID(t.ID, t.Status), TaskID: t.ID, Account: t.Account, URL: t.CallbackURL, Body: h.clientAnswer(ctx, t)}
}
