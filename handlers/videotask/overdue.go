package videotask

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// maxOverdueGrace is how long past storage.MaxTaskRun (the longest execution_expires_after) a
// task that its upstream still calls unfinished is followed before the gateway expires it.
const maxOverdueGrace = 10 * time.Minute

// overdue reports whether an unfinished task has run past the longest time any task may run: its
// upstream should have expired it, and the gateway does so itself before the record's own expiry
// (CreatedAt + MaxTaskRun + retention), which would otherwise drop the task with its slot held
// and its cost never refunded.
func (h *Handler) overdue(t storage.Task) bool {
	if !t.Unfinished() {
		return false
	}
	deadline := time.Unix(t.CreatedAt, 0).Add(storage.MaxTaskRun)
	grace := min(maxOverdueGrace, t.Expiry().Sub(deadline)/2)
	return h.now().After(deadline.Add(grace))
}

// expireOverdue finishes an overdue task as expired, once (compare-and-set), with a message that
// says why. Whoever wins the change releases the slot, refunds and queues the callback.
func (h *Handler) expireOverdue(ctx context.Context, t storage.Task) (storage.Task, error) {
	return h.settle(ctx, t, verdict{
		status:  StatusExpired,
		code:    "task_overdue",
		message: "the task did not finish within the longest execution time (" + storage.MaxTaskRun.String() + ")",
		logged:  "task expired: it ran past the longest execution time",
		fields:  []zap.Field{zap.String("last_status", t.Status)},
	})
}
