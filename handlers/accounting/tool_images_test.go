package accounting

import (
	"context"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/billing"
)

// TestHoldWithToolImages: a Responses request with an image_generation tool holds its tokens at
// its model's price and the tool's images at the image model's, in one hold; the settlement
// charges the tokens used and each image made (here two, past the one held); an unpriced
// request model holds the images alone; a release gives everything back.
func TestHoldWithToolImages(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	a, id := fundedAccountant(t, &now, 10_000_000)
	prices, err := billing.NewTable("USD", []billing.Price{
		{Model: "chat", InputTokens: 1_000_000, OutputTokens: 2_000_000, MaxOutput: 100},
		{Model: "img", Image: 40_000, ImageSizes: []billing.ImagePrice{{Size: "1024x1024", Quality: "high", Amount: 170_000}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Prices = prices
	ctx := context.Background()
	q := billing.Request{BodyBytes: 40}
	h, err := a.HoldWithToolImages(ctx, id, "chat", "", q, []billing.ToolImages{{Model: "img", Count: 1}, {Model: "unpriced", Count: 9}}, time.Minute)
	// 10 input tokens (0.00001), 100 output tokens (0.0002), one image at its costliest (0.17).
	if err != nil || !h.HoldsToolImages() || h.Estimate.Amount != 170_210 || h.Estimate.Usage.OutputTokens != 100 {
		t.Fatalf("hold = %+v, %v; want 0.17021 with the text usage", h, err)
	}
	made := billing.MadeImages{Reported: true, Images: []billing.MadeImage{{Size: "1024x1024", Quality: "low"}, {Size: "1024x1024", Quality: "high"}}}
	// 8 + 20 tokens: 0.000008 + 0.00004; images 0.04 + 0.17.
	if got := h.SettleWithImages(billing.Usage{InputTokens: 8, OutputTokens: 20, OutputReported: true}, made); got != 210_048 {
		t.Fatalf("settled %d, want 210048", got)
	}
	if again := h.SettleWithImages(billing.Usage{}, made); again != 0 {
		t.Fatalf("a second settlement charged %d", again)
	}
	if b := balance(t, a, "acme"); b.Amount != 10_000_000-210_048 {
		t.Fatalf("balance %+v", b)
	}

	free, err := a.HoldWithToolImages(ctx, id, "unpriced-chat", "", billing.Request{}, []billing.ToolImages{{Model: "img", Size: "1536x1024", Count: 3}}, time.Minute)
	if err != nil || free.Estimate.Amount != 120_000 {
		t.Fatalf("images of an unpriced request model = %+v, %v; want 3 × 0.04", free, err)
	}
	free.Release("refused by the upstream")
	if b := balance(t, a, "acme"); b.Amount != 10_000_000-210_048 {
		t.Fatalf("after a release: balance %+v", b)
	}
	none, err := a.HoldWithToolImages(ctx, id, "unpriced-chat", "", billing.Request{}, []billing.ToolImages{{Model: "unpriced", Count: 1}}, time.Minute)
	if err != nil || none.ID != "" {
		t.Fatalf("nothing priced = %+v, %v; want no hold", none, err)
	}
}
