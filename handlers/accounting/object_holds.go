package accounting

import (
	"cmp"
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/storage"
)

// A video that pass-through creates (POST /v1/videos, a remix, POST /v1/video/generations) is
// charged by how it ended, as a video task is: its create's hold is not ended with the create's
// request but carried by the video's record (storage.Task.HoldID, bound as a task's is, see
// Hold.BindTo), and ObjectFinished, called once by whoever stores the change that marks the
// record finished, settles or releases it.

// BindTo hands the hold over to the record taskID, which a create has just written with the
// hold's id (storage.Task.HoldID): the hold is no longer the request's to end (Settle and
// Release then do nothing, and its renewals stop), and the ledger binds it to the record
// (BindTask), so that the record's finish ends it and the reconciler leaves it alone. It reports
// whether the reconciler had released the hold first (see BindTask); Reconciled then reports it
// too, and the caller clears the record's slot (SlotGivenBack).
func (h Hold) BindTo(ctx context.Context, taskID string) (reconciled bool) {
	e := h.end
	if e == nil || !e.done.CompareAndSwap(false, true) {
		return false
	}
	e.stopRenewal()
	reconciled = e.a.BindTask(ctx, h.ID, taskID)
	e.reconciled.Store(reconciled)
	return reconciled
}

// unmadeStatuses are the final statuses of a pass-through object whose provider made nothing:
// its hold is released. Every other final status (completed, succeeded; deleted, which OpenAI
// allows only for a completed or failed video; the end of its lease) settles it.
var unmadeStatuses = []string{"failed", "cancelled", "canceled", "expired"}

// ObjectFinished ends an asynchronous object created through pass-through whose record the caller
// has just marked finished by compare-and-set (see passthrough.ObjectWatch.Finish,
// Router.EndLapsedSlots and passthrough.LapsedHeldObjects). Call it once per object: only after the
// update that set Finished was stored. It gives back the object's active slot, and ends the hold
// its record carries (a video's, storage.Task.HoldID): released when the record's status says
// that the provider made nothing (failed, cancelled, canceled, expired), else settled at the
// estimate. ObjectFinishedAs settles at what the answer that showed the end reported.
func (a *Accountant) ObjectFinished(ctx context.Context, t storage.Task) {
	a.ObjectFinishedAs(ctx, t, billing.Usage{})
}

// ObjectFinishedAs is ObjectFinished for an object whose end an answer showed: a settlement
// charges actual (the length and picture the answer reported) at the price the hold was taken
// at, the estimate standing in for what it does not report, as a video task's (SettleTask). The
// ledger's entry says which it was (a settlement, or a release noted "task failed"), and so does
// the usage record (task_finished, with the object's status and the amount charged).
func (a *Accountant) ObjectFinishedAs(ctx context.Context, t storage.Task, actual billing.Usage) {
	ctx = context.WithoutCancel(ctx)
	how := holdEndedHere
	if t.HoldID != "" {
		status := "succeeded"
		if unmade(t.Status) {
			status = t.Status
		}
		var amount billing.Money
		amount, how = a.settleTask(ctx, t, status, actual, false)
		a.Usage.Write(usage.Record{Event: usage.EventTaskFinished, Time: a.clock(), Account: t.Account, KeyID: t.KeyID,
			Endpoint: createEndpoint(t), Model: t.Model, Provider: t.Provider, Upstream: cmp.Or(t.Upstream, t.Provider), TaskID: t.ID,
			Status: t.Status, Amount: int64(amount), TraceID: usage.TraceID(ctx)})
	}
	if t.Active && how != holdEndedByReconciler {
		a.addRetrying(ctx, ActiveCounter(t.KeyID), -1, zap.String("key_id", t.KeyID), zap.String("object_id", t.ID), zap.String("what", "slot release"))
	}
}

// createEndpoint is the endpoint label of the create that made the object t, which its
// task_finished record names: the one its record keeps (storage.Task.Endpoint), else, for a
// record written before it kept one, its kind's create endpoint (pass-through's kinds, spelled
// here since passthrough imports this package): an image task's record that keeps the images
// its create asked for is an edit's (passthrough.ImageTaskAsked), any other a generation's. A
// remix's record written so is labelled /v1/videos.
func createEndpoint(t storage.Task) string {
	if t.Endpoint != "" {
		return t.Endpoint
	}
	switch t.Kind {
	case "video_job":
		return "/v1/videos"
	case "video_generation":
		return "/v1/video/generations"
	case storage.KindImage:
		if len(t.Usage) > 0 {
			return "/v1/images/edits"
		}
		return "/v1/images/generations"
	}
	return ""
}

// unmade reports whether an object's final status says its provider made nothing.
func unmade(status string) bool {
	for _, s := range unmadeStatuses {
		if strings.EqualFold(status, s) {
			return true
		}
	}
	return false
}
