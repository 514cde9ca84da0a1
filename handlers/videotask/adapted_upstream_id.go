package videotask

import (
	"context"
	"time"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/storage"
)

// An Ark task's id is the upstream's, so the store's create-if-absent of its record refuses a
// create that an upstream answered with the id of a task already recorded (a caching proxy, a
// provider that folds identical creates, a reused id). A task made through an adaptor has an id of
// the gateway's; the upstream's id of it (storage.Task.UpstreamID) is made unique the same way by
// a record of its own: the item (storage.Items) upstreamIDItem, claimed by the task's gateway id
// before the task's record is written. One compare-and-set on every backend, so of two creates
// answered with one upstream id exactly one gets it, and no second task ever reads, cancels or
// deletes the first one's upstream object.

// upstreamIDItem is the item id that records which task follows upstreamID at the upstream whose
// address (providers.Upstream.Address) is address. Its prefix keeps it apart from the response
// items that pass-through records (msg_…, rs_…), whose owner is an account, never a task id.
func upstreamIDItem(address, upstreamID string) string {
	return "video-task " + address + " " + upstreamID
}

// recordAdapted claims task's upstream id for it and then creates its record through slot, as the
// create of an Ark task's record does. It answers storage.ErrExists, writing nothing, when another
// task's record follows that upstream id at that upstream already. The claim lasts as long as the
// record can: the longest execution time with its grace, then the retention.
func (h *Handler) recordAdapted(ctx context.Context, slot accounting.Slot, u *providers.Upstream, task storage.Task) (storage.Task, error) {
	until := time.Unix(task.CreatedAt, 0).Add(storage.MaxTaskRun + maxOverdueGrace + h.retention())
	taken, err := h.Store.ClaimItems(ctx, task.ID, []string{upstreamIDItem(u.Address(), task.UpstreamID)}, until)
	if err != nil {
		return storage.Task{}, err
	}
	if len(taken) > 0 {
		return storage.Task{}, storage.ErrExists
	}
	return slot.CreateTask(ctx, h.Store, task)
}
