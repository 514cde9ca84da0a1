package billing

import "testing"

// TestReviewCacheWriteHoldCoversPlainInput: a body with cache_control is held its input at the
// costlier write price; when the operator prices both writes below input_tokens (a provider
// whose cache writes are discounted), an answer that reports its input with no writes is charged
// at input_tokens, above that hold. The hold must be at the costliest of the three.
func TestReviewCacheWriteHoldCoversPlainInput(t *testing.T) {
	p := &Price{Model: "c", InputTokens: m(t, "3"), CacheWrite5mTokens: m(t, "1"), CacheWrite1hTokens: m(t, "2")}
	e := p.EstimateRequest(Request{BodyBytes: 4000, MaxOutput: 100, CacheWrites: true})
	charged := p.Settle(e.Usage, Usage{InputTokens: 1000, OutputReported: true})
	if charged > e.Amount {
		t.Errorf("held %s, charged %s for its 1000 input tokens reported without writes; the hold must cover it", e.Amount, charged)
	}
}
