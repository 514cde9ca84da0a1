package accounting

import (
	"context"
	"math"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
)

// toolImagesHold is the part of a request's hold that pays for the images its image_generation
// tool may make: the image model's price, and the images held at it.
type toolImagesHold struct {
	price    *billing.Price
	estimate billing.Estimate
	// maxCalls is the request's max_tool_calls (0: none), past which no image is charged.
	maxCalls int64
}

// HoldWithToolImages is HoldFor of a pass-through request q for model (its estimate at model's
// price, billing.Price.EstimateRequest) whose image_generation tools (tools) run image
// models of their own: one hold of the request's estimate and of the images the tool may make
// at its image model's price (billing.Price.EstimateToolImages; of several such tools, the one
// whose images hold the most, whose price then charges every image made). Either part may be
// unpriced: it adds nothing, and when neither is priced nothing is held. The hold is settled by
// SettleWithImages (the request's usage at model's price, and each image made at the tool
// model's, at most the tool's MaxCalls of them), exactly once, or released; it is renewed while the request runs, as HoldFor's.
func (a *Accountant) HoldWithToolImages(ctx context.Context, id auth.Identity, model, ref string, q billing.Request, tools []billing.ToolImages, deadline time.Duration) (Hold, error) {
	var tool *toolImagesHold
	for _, t := range tools {
		price, ok := a.Prices.Price(t.Model)
		if !ok {
			continue
		}
		if est := price.EstimateToolImages(t); tool == nil || est.Amount > tool.estimate.Amount {
			tool = &toolImagesHold{price: price, estimate: est, maxCalls: t.MaxCalls}
		}
	}
	estimate := func(p *billing.Price) billing.Estimate { return p.EstimateRequest(q) }
	if tool == nil {
		return a.HoldFor(ctx, id, model, ref, estimate, deadline)
	}
	price, ok := a.Prices.Price(model)
	var est billing.Estimate
	if ok {
		est = estimate(price)
	} else {
		price = &billing.Price{Model: model} // free: its usage costs nothing
	}
	est.Amount = addMoney(est.Amount, tool.estimate.Amount)
	h, err := a.hold(ctx, id, model, ref, est, price, deadline)
	if err == nil {
		h.end.tool = tool
		h.end.renew(h.ID, deadline)
	}
	return h, err
}

// HoldsToolImages reports whether the hold pays for images a tool may make: the request's
// answer is then read for them (see SettleWithImages).
func (h Hold) HoldsToolImages() bool { return h.end != nil && h.end.tool != nil }

// addMoney is a + b, saturating at the largest amount instead of wrapping (withinLedger then
// bounds it).
func addMoney(a, b billing.Money) billing.Money {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
