package imageedit

import (
	"context"
	"net/http"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/handlers/passthrough"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/storage"
)

// An edit that the provider answers with a task id is charged by how the task ended, as an
// image task that pass-through creates is (see passthrough/image_end.go): the task's record
// carries the edit's hold (bound to it with accounting.Hold.BindTo), and the query that shows
// the task final settles it at the images its answer reports, at most the n the edit asked for
// (finishedByAnswer), or releases it when the task failed, was cancelled or expired. A task
// whose end no query shows is settled at its estimate when its lease ends.

// recordTask records the image task taskID, which the edit's provider p made on up, as the
// calling account's: its record keeps the edit's active-task slot and carries its hold. It
// reports whether the record keeps the slot (or kept it: a task that answer, the edit's
// answer, shows final already is ended at once, see finishedByAnswer). When the record cannot
// be written, the task id is not handed out and the hold is settled at its estimate: there is
// no way to cancel an image task upstream, so the task runs, and its cost stays charged.
func (h *Handler) recordTask(ctx context.Context, r *http.Request, id auth.Identity, p *providers.Provider, up *providers.Upstream,
	model, taskID string, answer []byte, slot accounting.Slot, hold accounting.Hold) (kept bool, err error) {
	t := h.now()
	task := storage.Task{
		ID: taskID, Kind: storage.KindImage, Account: id.Account, KeyID: id.KeyID,
		Provider: p.Name, Upstream: up.Name, UpstreamAddress: up.Address(), Model: model, Status: "queued",
		Endpoint:  usage.From(r.Context()).EndpointOr(r.URL.Path),
		CreatedAt: t.Unix(), UpdatedAt: t.Unix(), ExpiresAt: t.Add(h.retention()).Unix(),
	}
	if slot.Held {
		task.Active, task.Status = true, passthrough.StatusActive
	}
	if hold.ID != "" {
		task.HoldID, task.HoldAmount = hold.ID, int64(hold.Estimate.Amount)
		task.HoldUsage, task.HoldPrice = hold.Estimate.Usage.Encode(), hold.EncodedPrice()
		task.Usage = passthrough.ImageTaskAsked(hold.Estimate.Usage.Images)
	}
	stored, err := slot.CreateTask(ctx, h.Store, task)
	if err != nil {
		usage.From(r.Context()).Settled(int64(hold.Settle(billing.Usage{})))
		idempotency.MarkMade(r.Context())
		if hold.Reconciled() {
			slot.GivenBack()
		}
		h.Logger.Error("image task created upstream but its ownership could not be recorded; its cost stays charged",
			zap.String("task_id", taskID), zap.Error(err))
		return false, err
	}
	// The edit's request record names the task; the task's end writes its task_finished.
	usage.From(r.Context()).Task(taskID)
	kept = stored.Active // not a claimed slot that the reconciler gave back first
	if task.HoldID != "" && hold.BindTo(ctx, taskID) {
		// The edit outlived its hold's deadline: the reconciler released the hold and gave the
		// slot back with it. The record keeps neither: its end charges nothing.
		slot.GivenBack()
		if kept {
			h.Accounting.SlotGivenBack(ctx, taskID)
		}
		kept = false
	}
	if kept {
		// A task whose create's answer shows it final already (failed at once) ends now, as
		// a query's answer showing it so would end it.
		h.finishedByAnswer(ctx, taskID, answer)
	}
	return kept, nil
}
