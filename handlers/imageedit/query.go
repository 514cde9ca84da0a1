package imageedit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

// A query of an image task is not charged, and a client may send many at once; the answer of a
// succeeded task may carry its images as b64_json, tens of MB. So a query never holds a long
// answer whole: an answer of up to heldAnswer bytes is read whole, checked and passed on
// (passHeld); a longer one goes on to the client as it comes (streamAnswer), read as it passes
// for what ends the task. Only the answer of a task whose model the provider knows by another id
// (model_map), which the gateway rewrites, is held whole past heldAnswer, by at most
// maxLongHeld queries at once (holdLong).
const (
	// heldAnswer bounds the part of a query's answer that is held whole.
	heldAnswer = 64 << 10
	// maxLongHeld bounds the queries that hold a long answer whole at once.
	maxLongHeld = 2
)

// query answers GET /v1/images/tasks/{id} for the owning account only.
func (h *Handler) query(w http.ResponseWriter, r *http.Request, id auth.Identity, taskID string) error {
	t, err := h.Store.Task(r.Context(), taskID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (!id.Sees(t.Account, t.Model) || t.Kind != storage.KindImage)) {
		return errNoTask
	}
	if err != nil {
		return err
	}
	p, ok := h.boundUpstream(t)
	if !ok {
		return apierror.New(http.StatusConflict, "provider_unavailable", "the upstream of this task is no longer configured")
	}
	// The client going away does not cut the provider's answer short: the end of the task that
	// it shows is still read and settled (bounded by upstream_timeout).
	ctx := context.WithoutCancel(r.Context())
	ans, rest, err := h.client().CallHeld(ctx, p, http.MethodGet, TasksPath+"/"+url.PathEscape(taskID), heldAnswer)
	if err != nil {
		return err
	}
	if ans.Status == http.StatusNotFound {
		return errNoTask
	}
	if !ans.OK() {
		return upstream.Refusal(ans)
	}
	if rest == nil {
		return h.passHeld(w, r, t, p, ans)
	}
	defer h.closeRest(rest)
	if !h.shownModel(t) {
		return h.streamAnswer(w, r, t, p, ans, rest)
	}
	release, err := h.holdLong(r.Context())
	if err != nil {
		return nil // the client left: nobody reads an answer (the next query, or the lease, ends the task)
	}
	defer release()
	if ans.Body, err = readRest(ans.Body, rest); err != nil {
		return err
	}
	return h.passHeld(w, r, t, p, ans)
}

// passHeld passes on an answer read whole: checked to be one JSON object (else 502
// invalid_response), with the upstream's credentials redacted where it quotes one, the task
// ended when it shows it final, and the client's model id shown for the upstream's.
func (h *Handler) passHeld(w http.ResponseWriter, r *http.Request, t storage.Task, p *providers.Upstream, ans upstream.Answer) error {
	if !jsonObject(ans.Body) {
		return upstream.ErrUnreadable // not a task's answer: never passed on as the provider typed it
	}
	ans.Body = upstream.WithoutCredentials(p, ans.Body)
	if t.Active && !t.Finished {
		h.finishedByAnswer(r.Context(), t.ID, ans.Body)
	}
	// The answer shows the client's model id, as the create's did (see create): never the
	// upstream's id of an aliased model (model_map).
	if h.shownModel(t) {
		if shown, ok := providers.ReplaceModel(ans.Body, t.Model); ok {
			ans.Body = shown
		}
	}
	passOn(w, ans)
	return nil
}

// shownModel reports whether the answers of t's queries are rewritten to show the client's
// model id: its provider knows the model by another id (model_map).
func (h *Handler) shownModel(t storage.Task) bool {
	prov, ok := h.Catalog.Provider(t.Provider)
	return ok && prov.UpstreamModel(t.Model) != t.Model
}

// holdLong waits for one of the maxLongHeld places of queries that hold a long answer whole, as
// long as the client waits; release gives it back.
func (h *Handler) holdLong(ctx context.Context) (release func(), err error) {
	h.longOnce.Do(func() { h.longHeld = make(chan struct{}, maxLongHeld) })
	select {
	case h.longHeld <- struct{}{}:
		return func() { <-h.longHeld }, nil
	case <-ctx.Done():
		return nil, errClientLeft
	}
}

// errClientLeft is a query whose client left before its answer could be read.
var errClientLeft = errors.New("the client left")

// readRest is the whole of an answer whose first bytes are first and whose rest is rest.
func readRest(first []byte, rest *upstream.Rest) ([]byte, error) {
	all := bytes.NewBuffer(make([]byte, 0, max(int64(len(first)), rest.Declared)))
	all.Write(first)
	if _, err := all.ReadFrom(rest); err != nil {
		if e, ok := errors.AsType[*apierror.Error](err); ok {
			return nil, e // ErrTooLarge, ErrTimeout
		}
		return nil, upstream.ErrUnreadable
	}
	return all.Bytes(), nil
}

// closeRest closes the unread rest of an answer.
func (h *Handler) closeRest(rest io.Closer) {
	if err := rest.Close(); err != nil {
		h.Logger.Debug("closing an image task's answer", zap.Error(err))
	}
}
