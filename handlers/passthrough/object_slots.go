package passthrough

import (
	"context"
	"errors"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/storage"
)

// Another handler that creates asynchronous objects outside pass-through (mediagw_image_edits:
// an edit answered with an image task id, and the owner's queries of image tasks, which also
// serve the image tasks that pass-through image generations made) keeps their active-task slots
// by the same rules (see active_objects.go), through these.

// StatusActive is the stored status of a record that holds its key's active-task slot. A record
// created with Active true and this status is a slot-holding object: a query that shows it final
// (FinishFromAnswer), a delete, or the end of its lease gives the slot back.
const StatusActive = statusActive

// TakeSlot takes one of the key's active-task slots for a create that makes an asynchronous
// object. At the key's limit it first gives back the slots of the key's objects whose lease has
// ended (see EndLapsedSlots) and tries once more. A sweep that fails is returned as sweepErr
// beside the slot or the 429, for the caller to log.
func (rt *Router) TakeSlot(ctx context.Context, a *accounting.Accountant, id auth.Identity, model string) (slot accounting.Slot, sweepErr, err error) {
	slot, err = a.StartTaskFor(ctx, id, model)
	if e, ok := errors.AsType[*apierror.Error](err); !ok || e.Code != "too_many_active_tasks" {
		return slot, nil, err
	}
	ended, sweepErr := rt.EndLapsedSlots(ctx, id)
	for _, t := range ended {
		a.ObjectFinished(ctx, t)
	}
	if len(ended) == 0 {
		return slot, sweepErr, err
	}
	slot, err = a.StartTaskFor(ctx, id, model)
	return slot, sweepErr, err
}

// FinishFromAnswer ends the slot-holding object id when body, the body of a 2xx answer to a
// query of it, has a final top-level status (completed, succeeded, failed, cancelled, canceled
// or expired, in any case), by compare-and-set. It returns the record and true when this call
// stored that change: the caller then gives back the object's slot
// (accounting.Accountant.ObjectFinished), once.
func (rt *Router) FinishFromAnswer(ctx context.Context, id string, body []byte) (storage.Task, bool, error) {
	status := answerStatus(body)
	if status == "" {
		return storage.Task{}, false, nil
	}
	return rt.finishObject(ctx, id, status, func(storage.Task) bool { return true })
}
