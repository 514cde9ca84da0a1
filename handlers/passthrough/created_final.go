package passthrough

import (
	"context"

	"github.com/mediagw/mediagw/storage"
)

// createdFinal is the final status (failed, or succeeded …: see finalStatuses) that answer, the
// create's answer held whole, shows at its top level for the image task it made, whose record
// keeps its slot (kept) and carries the create's hold; else "". A provider that refuses a
// generation after accepting it may answer its task id with the status failed at once.
func createdFinal(kind string, kept bool, answer []byte) string {
	if kind != storage.KindImage || !kept {
		return ""
	}
	return answerStatus(answer)
}

// EndedAtOnce marks finished the image task whose record carries the create's hold (HeldBy) when
// the create's answer showed it final already, by the compare-and-set a query's answer showing
// it so uses (see ObjectWatch.Finish), so that it ends at once instead of at a query or at the
// end of its lease. Call it after the hold was handed over (accounting.Hold.BindTo). It returns
// the record and true when this call stored the change: the caller then ends the task
// (accounting.Accountant.ObjectFinishedAs, with ImageTaskReported: a failed task is released, a
// succeeded one, whose answer has no images, settled at its estimate), once.
func (rt *Router) EndedAtOnce(ctx context.Context, cw *CreatedWriter) (storage.Task, bool, error) {
	if cw == nil || cw.heldBy == "" || cw.endedAs == "" {
		return storage.Task{}, false, nil
	}
	return rt.finishObject(ctx, cw.heldBy, cw.endedAs, func(storage.Task) bool { return true })
}
