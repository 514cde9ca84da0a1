package billing

import "testing"

// TestAmountChargesCacheReadsAtTheirRate: reads (in InputTokens too) cost cache_read_tokens,
// by default a tenth of input_tokens rounded up to the micro-unit; never more than the input.
func TestAmountChargesCacheReadsAtTheirRate(t *testing.T) {
	for _, c := range []struct {
		p    *Price
		u    Usage
		want string
	}{
		{&Price{Model: "c", InputTokens: m(t, "1000"), OutputTokens: m(t, "2000")}, Usage{InputTokens: 1010, CacheReadTokens: 1000, OutputTokens: 4}, "0.118"},
		{&Price{Model: "c", InputTokens: m(t, "3")}, Usage{InputTokens: 4000, CacheReadTokens: 4000}, "0.0012"},
		{&Price{Model: "c", InputTokens: m(t, "3"), CacheReadTokens: m(t, "1")}, Usage{InputTokens: 4000, CacheReadTokens: 4000}, "0.004"},
		{&Price{Model: "c", InputTokens: m(t, "0.000001")}, Usage{InputTokens: 1_000_000, CacheReadTokens: 1_000_000}, "0.000001"},
		{&Price{Model: "c", InputTokens: m(t, "1000")}, Usage{InputTokens: 10, CacheReadTokens: 1000}, "0.001"},
	} {
		if got := c.p.Amount(c.u); got != m(t, c.want) {
			t.Errorf("%+v at input %s: %s, want %s", c.u, c.p.InputTokens, got, c.want)
		}
	}
}
