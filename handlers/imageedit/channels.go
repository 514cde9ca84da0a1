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
	client := h.client()
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
		if err := takeCopy(ans); err != nil {
			return upstream.Answer{}, u, err
		}
		if shown, ok := providers.ReplaceModel(ans.Body, model); ok {
			ans.Body = shown
		}
	}
	return ans, u, err
}

// takeCopy takes room in the answer budget for a copy of ans's body, which its edit is about to
// make: ErrBusyAnswered (the provider made the images) for a successful answer when there is no
// room, ErrBusy for any other.
func takeCopy(ans upstream.Answer) error {
	switch {
	case ans.Take(int64(len(ans.Body))):
		return nil
	case ans.OK():
		return upstream.ErrBusyAnswered
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
	if err := takeCopy(ans); err != nil {
		return upstream.Answer{}, u, err
	}
	if ans.Body, err = fromSeedream(ans.Body); err != nil {
		return ans, u, err
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
