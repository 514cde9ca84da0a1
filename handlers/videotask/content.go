package videotask

import (
	"context"
	"errors"
	"io"
	"net/http"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// contentPath ends the path of a task's content endpoint: …/tasks/{id}/content.
const contentPath = "content"

var (
	errNoContent = apierror.New(http.StatusNotFound, "not_found",
		"this task's result is not served here: fetch it from content.video_url of the task's answer")
	errNotSucceeded = apierror.New(http.StatusConflict, "task_not_succeeded", "the task has no result: it has not succeeded")
	errNoCancel     = apierror.New(http.StatusConflict, "cancel_not_supported",
		"the provider of this task cannot cancel it; it runs to its end")
)

// content answers GET …/tasks/{id}/content: the video of a succeeded task whose result needs the
// operator's credential (a Veo file), streamed from the provider to the task's owner. Another
// account's task gets the answer of an unknown one; the credential and the provider's address
// never reach the client. The provider's calls it makes count on the upstream's max_rps (see
// openContent): when the next free one is more than 5 s off, or the provider answered 429
// (MiniMax's 1002) and its reads are paused, the client gets 429 rate_limit_exceeded with the
// Retry-After of the next share; a provider without max_rps and not paused never refuses one.
func (h *Handler) content(w http.ResponseWriter, r *http.Request, id auth.Identity, taskID string) error {
	t, err := h.owned(r.Context(), id, taskID)
	if err != nil {
		return err
	}
	a, ok := h.taskAdaptor(t)
	if !ok {
		return errNoContent
	}
	if t.Status != StatusSucceeded {
		return errNotSucceeded
	}
	u, ok := h.boundUpstream(t)
	if !ok {
		return errNoContent
	}
	resp, err := h.openContent(r.Context(), a, u, t)
	switch {
	case errors.Is(err, adaptor.ErrUnsupported), errors.Is(err, adaptor.ErrNotFound):
		return errNoContent
	case err != nil:
		return err
	}
	defer func() {
		if err := resp.Body.Close(); err != nil {
			h.Logger.Debug("closing a task's content", zap.String("task_id", t.ID), zap.Error(err))
		}
	}()
	contentHeaders(w.Header(), resp.Header, u.Credentials())
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, resp.Body); err != nil {
		// The status is sent: the client sees a short body. Logged without the provider's URL.
		h.Logger.Warn("streaming a task's content ended early", zap.String("task_id", t.ID), zap.Error(err))
	}
	return nil
}

// cancelAdapted is cancel for a task made through an adaptor. The task is read first: a finished
// one is forgotten here, and deleted upstream first where the provider keeps it (an
// adaptor.Deleter: OpenAI's videos); an unfinished one is cancelled upstream where the provider
// allows it, and recorded as cancelled only when a read after the cancel confirms it.
func (h *Handler) cancelAdapted(ctx context.Context, t storage.Task, u *providers.Upstream) error {
	a, ok := h.taskAdaptor(t)
	if !ok {
		if _, err := h.orphaned(ctx, t); err != nil {
			return err
		}
		return apierror.New(http.StatusConflict, "provider_unavailable", "the protocol of this task's provider changed; it can no longer be followed")
	}
	cur, err := h.refresh(ctx, t)
	switch {
	case errors.Is(err, errTaskNotExist):
		return h.forget(ctx, t.ID)
	case err != nil:
		return err
	case storage.Terminal(cur.Status):
		if d, ok := a.(adaptor.Deleter); ok {
			if err := d.Delete(ctx, h.caller(u), t.UpstreamID); err != nil && !errors.Is(err, adaptor.ErrNotFound) {
				return err
			}
		}
		return h.forget(ctx, t.ID)
	}
	err = a.Cancel(ctx, h.caller(u), t.UpstreamID)
	switch {
	case errors.Is(err, adaptor.ErrUnsupported):
		return errNoCancel
	case errors.Is(err, adaptor.ErrNotFound):
		return h.forget(ctx, t.ID)
	case err != nil:
		return err
	}
	if _, err := h.refresh(ctx, cur); err != nil && !errors.Is(err, errTaskNotExist) {
		return err
	}
	return nil
}
