package videotask

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/storage"
)

// madeByKey finds the task that an earlier create with the request's Idempotency-Key made and
// recorded, when that create's answer was never kept: its gateway died after writing the task's
// record (which carries the key, storage.Task.IdempotencyKey) and before the guard stored the
// answer, and the retry ran once the key's lease ran out. ok reports that the retry is to answer
// that task, as the first create would have, and make nothing: no slot, no hold, no upstream call.
// The guard keeps that answer (idempotency.MarkMade). A store that cannot be asked fails the
// retry (500, which frees the key) rather than risk a second task.
func (h *Handler) madeByKey(ctx context.Context, id auth.Identity) (made storage.Task, ok bool, err error) {
	key := idempotency.RecordKey(ctx)
	if key == "" {
		return storage.Task{}, false, nil
	}
	t, err := h.Store.TaskOfIdempotencyKey(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return storage.Task{}, false, nil
	case err != nil:
		return storage.Task{}, false, err
	case t.Account != id.Account: // the key's scope names the account: never so
		return storage.Task{}, false, nil
	}
	idempotency.MarkMade(ctx)
	h.Logger.Info("a create retried with the Idempotency-Key of one whose task was recorded but whose answer was not kept; answering that task",
		zap.String("task_id", t.ID), zap.String("account", t.Account))
	return storedAnswer(t), true, nil
}
