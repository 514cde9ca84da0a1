package imageedit

import (
	"context"
	"encoding/json"
	"mime"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/storage"
)

// editSizing is what a checked edit body (see ParseEdit) says its price depends on: n images
// (default 1) of size (default 2048x2048) and quality. ParseEdit has refused repeated keys,
// keys that differ from these only by case, and values of the wrong type, so the fields read
// here are the ones forwarded.
func editSizing(body []byte) (billing.Request, error) {
	var f struct {
		N       int64  `json:"n"`
		Size    string `json:"size"`
		Quality string `json:"quality"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return billing.Request{}, err
	}
	return billing.Request{Images: true, N: f.N, ImageSize: f.Size, ImageQuality: f.Quality}, nil
}

// hold holds the estimate of an edit for a priced model against the account's balance and the
// key's budget (402 when it does not fit); nothing for a model without a price. The hold ends
// in edit: settled from the items in the answer's data, or released when the upstream refuses.
// One the process never ends (a crash) is released by the reconciler at its deadline, and with
// it the edit's active slot (accounting.SlotRef).
func (h *Handler) hold(ctx context.Context, id auth.Identity, model string, body []byte, slot accounting.Slot) (accounting.Hold, error) {
	if h.Accounting == nil {
		return accounting.Hold{}, nil
	}
	sizing, err := editSizing(body)
	if err != nil {
		return accounting.Hold{}, err
	}
	return h.Accounting.HoldFor(ctx, id, model, slot.HoldRef(), func(p *billing.Price) billing.Estimate {
		return p.EstimateRequest(sizing)
	}, storage.DefaultHoldDeadline)
}

// streamedAnswer reports whether a successful answer is a stream (text/event-stream): an edit
// sent with "stream": true, which OpenAI answers with image_edit.partial_image and
// image_edit.completed events. The handler reads the whole answer before passing it on, so the
// client gets its events at once.
func streamedAnswer(ans upstream.Answer) bool {
	mt, _, err := mime.ParseMediaType(ans.Header.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// settleStream ends the hold of an edit answered with a stream (see streamedAnswer) as
// mediagw_route ends a streamed image generation's: charged for the completed images, each at
// the size and quality it reports for what the request left open; charged the estimate when
// only partial images came (the client got pictures of images being made, which the provider
// bills, and a partial image reports no size or quality); released when no image came at all
// (an error event, a stream broken off before its first image).
func settleStream(ctx context.Context, hold accounting.Hold, body []byte) {
	var events usage.ImageEvents
	events.Write(body)
	switch {
	case events.Completed() > 0:
		size, quality := billing.AnswerImage(events.Reported())
		usage.From(ctx).Settled(int64(hold.Settle(billing.Usage{Images: atMostAsked(hold, events.Completed()), ImageSize: size, ImageQuality: quality})))
	case events.Partials() > 0:
		usage.From(ctx).Settled(int64(hold.Settle(billing.Usage{})))
	default:
		hold.Release("the upstream streamed no image")
	}
}

// atMostAsked is made, the images an edit's answer has, bounded by the n the edit asked for (its
// hold's estimate; the request the handler sent, a Seedream set's max_images too): a broken or
// hostile provider that answers more images than were asked for is charged n, the hold.
func atMostAsked(hold accounting.Hold, made int64) int64 {
	if asked := hold.Estimate.Usage.Images; asked > 0 {
		return min(made, asked)
	}
	return made
}
