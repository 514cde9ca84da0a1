package imageedit

import (
	"context"
	"net/http"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

var errModelMember = apierror.New(http.StatusBadRequest, "invalid_request_body", "model must be the body's top-level \"model\" string member").WithParam("model")

// create sends the edit to one of the provider's upstreams (see upstream.Client.Create), with
// the upstream's model id, and shows the client's id in the answer. A provider whose protocol is
// written out as ark gets generation instead, the edit as a Seedream image generation
// (toSeedream; see createSeedream). The answer is read into room, the edit's reservation of the
// answer budget (see EditAnswerReserve), which the caller releases once it is passed on.
func (h *Handler) create(ctx context.Context, account string, p *providers.Provider, model string, body, generation []byte, room *upstream.AnswerHold) (upstream.Answer, *providers.Upstream, error) {
	client := h.clientFor(account)
	client.Hold = room
	if p.Protocol == adaptor.Ark {
		return createSeedream(ctx, client, account, p, generation)
	}
	aliased := p.UpstreamModel(model) != model
	if aliased {
		mapped, ok := providers.ReplaceModel(body, p.UpstreamModel(model))
		if !ok {
			return upstream.Answer{}, nil, errModelMember
		}
		body = mapped
	}
	ans, u, err := client.Create(ctx, account, p, EditsPath, body)
	if err == nil && aliased {
		if shown, ok := providers.ReplaceModel(ans.Body, model); ok && !ans.Replace(shown) {
			return upstream.Answer{}, u, busy(ans)
		}
	}
	return ans, u, err
}

// busy is the error of an answer whose copy found no room in the answer budget (see
// upstream.Answer.Replace): for a successful answer (the provider made the images) its
// Answer.BusyError, ErrBusy for any other.
func busy(ans upstream.Answer) error {
	if ans.OK() {
		return ans.BusyError()
	}
	return upstream.ErrBusy
}

// createSeedream sends an edit's Seedream image generation (toSeedream) to Ark's
// images/generations and maps a 2xx answer back to the edit's shape (see fromSeedream). A refusal
// passes on as it came: Ark's error shape, {"error": {"code", "message"}}, is the one
// upstream.Refusal reads.
func createSeedream(ctx context.Context, client upstream.Client, account string, p *providers.Provider, generation []byte) (upstream.Answer, *providers.Upstream, error) {
	ans, u, err := client.Create(ctx, account, p, SeedreamPath, generation)
	if err != nil || !ans.OK() {
		return ans, u, err
	}
	shown, err := fromSeedream(ans.Body)
	if err != nil {
		return ans, u, err
	}
	if !ans.Replace(shown) {
		return upstream.Answer{}, u, busy(ans)
	}
	ans.Header = http.Header{"Content-Type": {"application/json"}}
	return ans, u, nil
}

// boundUpstream is the upstream an image task was created on, if it is still configured (under
// its name and at its address: see providers.Provider.Bound).
func (h *Handler) boundUpstream(t storage.Task) (*providers.Upstream, bool) {
	p, ok := h.Catalog.Provider(t.Provider)
	if !ok {
		return nil, false
	}
	return p.Bound(t.Upstream, t.UpstreamAddress)
}
