package imageedit

import (
	"context"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/passthrough"
)

// An edit answered with an image task id makes an object that runs on upstream, like the image
// tasks, videos and video generations that pass-through creates: it holds one of the key's
// active-task slots (max_active_tasks) from before the edit is sent until a query of the task
// shows it final, or its lease ends (passthrough.DefaultSlotLease), by pass-through's rules and
// bookkeeping (passthrough.Router.TakeSlot, FinishFromAnswer, EndLapsedSlots). A synchronous
// answer, a refusal or a failure gives the slot back at once. The query of an image task gives
// back the slot of a pass-through image generation's task as well: both are the account's image
// tasks, and a site may route GET /v1/images/tasks/{id} here.

// objects is the slot bookkeeping of image tasks: pass-through's, on the handler's store and clock.
func (h *Handler) objects() *passthrough.Router {
	h.slotsOnce.Do(func() { h.slots = &passthrough.Router{Owners: h.Store, Now: h.Now} })
	return h.slots
}

// takeSlot takes one of the key's active-task slots for an edit (none without Accounting).
func (h *Handler) takeSlot(ctx context.Context, id auth.Identity, model string) (accounting.Slot, error) {
	if h.Accounting == nil {
		return accounting.Slot{}, nil
	}
	slot, sweepErr, err := h.objects().TakeSlot(ctx, h.Accounting, id, model)
	if sweepErr != nil {
		h.Logger.Error("ending the lapsed active-task slots of a key failed", zap.String("key_id", id.KeyID), zap.Error(sweepErr))
	}
	return slot, err
}

// finishedByAnswer ends the image task taskID when body, a 2xx answer to its query, shows it
// final; once, whoever stores that change: it gives back the task's slot and settles the hold
// its record carries at the images body reports (passthrough.ImageTaskReported), or releases it
// when the task made nothing.
func (h *Handler) finishedByAnswer(ctx context.Context, taskID string, body []byte) {
	ctx = context.WithoutCancel(ctx)
	t, won, err := h.objects().FinishFromAnswer(ctx, taskID, body)
	if err != nil {
		h.Logger.Error("marking a finished image task failed; its slot is given back (and its hold settled) when its lease ends",
			zap.String("task_id", taskID), zap.Error(err))
	}
	if won && h.Accounting != nil {
		h.Accounting.ObjectFinishedAs(ctx, t, passthrough.ImageTaskReported(t, body))
	}
}
