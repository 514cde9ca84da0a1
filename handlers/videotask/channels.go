package videotask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

// errModelMember refuses a body whose model cannot be mapped to the upstream's id in place.
var errModelMember = apierror.New(http.StatusBadRequest, "invalid_request", "model must be the body's top-level \"model\" string member")

// launch creates the task on one of the provider's upstreams (see upstream.Client.Create), or on
// bound alone when the body names an object made there (a draft), and returns its id and the
// upstream, to which the task is bound from then on. A 2xx answer whose id cannot be used is
// errUnfollowable, with the upstream that gave it. No call runs past until.
func (h *Handler) launch(ctx context.Context, until time.Time, account string, p *providers.Provider, bound *providers.Upstream, model string, body []byte) (string, *providers.Upstream, error) {
	if up := p.UpstreamModel(model); up != model {
		mapped, ok := providers.ReplaceModel(body, up)
		if !ok {
			return "", nil, errModelMember
		}
		body = mapped
	}
	var ans upstream.Answer
	var u *providers.Upstream
	var err error
	c := h.upstream()
	c.Until = until
	if bound != nil {
		ans, u, err = c.CreateOn(ctx, account, bound, TasksPath, body)
	} else {
		ans, u, err = c.Create(ctx, account, p, TasksPath, body)
	}
	if u != nil {
		u.Spend() // a create counts towards the upstream's max_rps, never waits for it
	}
	if err != nil {
		return "", nil, err
	}
	if !ans.OK() {
		return "", nil, upstream.Refusal(ans)
	}
	id, ok := createdID(ans.Body)
	if !ok || id == "" {
		return "", nil, upstream.ErrUnreadable
	}
	if !upstream.UsableID(id) || u != nil && u.Echoes([]byte(id)) {
		// An id that quotes the operator's credential would hand it to the client.
		return "", u, errUnfollowable
	}
	return id, u, nil
}

// createdID reads the task id of a create's answer as json.Unmarshal reads it into a struct with
// an `json:"id"` string field (ok false when it does not decode), without the decoder for the
// usual answer: {"id":"<id>"}, the id printable ASCII without a quote or backslash.
func createdID(body []byte) (id string, ok bool) {
	if inner, found := bytes.CutPrefix(bytes.Trim(body, " \t\r\n"), []byte(`{"id":"`)); found {
		if raw, found := bytes.CutSuffix(inner, []byte(`"}`)); found && plainKey(raw) {
			return string(raw), true
		}
	}
	var created struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &created) != nil {
		return "", false
	}
	return created.ID, true
}

// errUnfollowable is a create that the upstream accepted with an id the gateway cannot use (see
// upstream.UsableID), or one that quotes the upstream's credential: the task may run there, so its cost and slot stay taken, though it cannot
// be followed. The client gets upstream.ErrUnreadable.
var errUnfollowable = errors.New("the upstream accepted the task with an id that cannot be used")

// boundUpstream is the upstream a task was created on, if it is still configured (under its name
// and at its address: see providers.Provider.Bound).
func (h *Handler) boundUpstream(t storage.Task) (*providers.Upstream, bool) {
	p, ok := h.Catalog.Provider(t.Provider)
	if !ok {
		return nil, false
	}
	return p.Bound(t.Upstream, t.UpstreamAddress)
}

// orphaned settles a task whose upstream left the configuration (or whose upstream's name now
// stands for another base URL): an unfinished one can no longer be followed, so it finishes as
// failed, once (compare-and-set), with a message that says why. Whoever wins the change releases
// the slot, refunds and queues the callback.
func (h *Handler) orphaned(ctx context.Context, t storage.Task) (storage.Task, error) {
	name := t.Provider
	if t.Upstream != "" {
		name += "/" + t.Upstream
	}
	v := verdict{
		status:  StatusFailed,
		code:    "upstream_removed",
		message: "the upstream " + name + " that ran this task is no longer configured, so the task cannot be followed",
		logged:  "task failed: its upstream left the config",
		fields:  []zap.Field{zap.String("upstream", name)},
	}
	if p, ok := h.Catalog.Provider(t.Provider); ok {
		if _, named := p.Upstream(t.Upstream); named {
			// The name is configured again, for another base URL: the task is not there.
			v.message = "the upstream " + name + " that ran this task is now configured with another base URL, so the task cannot be followed"
			v.logged = "task failed: its upstream's name now stands for another base URL"
		}
	}
	return h.settle(ctx, t, v)
}
