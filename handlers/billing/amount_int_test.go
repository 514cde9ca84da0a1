package billing

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The int64 path of Amount (prices without video units) gives what the exact big.Rat path
// gives, on random usages and prices (rounding half up included), and leaves to it what would
// overflow, which it saturates.
func TestAmountWithoutVideoIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 9)) // fixed: the same cases every run
	for i := range 20000 {
		p := &Price{Model: "m", InputTokens: Money(rng.Int64N(5_000_000)), OutputTokens: Money(rng.Int64N(20_000_000)),
			Request: Money(rng.Int64N(3) * rng.Int64N(2_000_000)), Image: Money(rng.Int64N(2) * rng.Int64N(200_000)),
			ImageSizes: []ImagePrice{{Size: "1024x1024", Quality: "high", Amount: 170_000}}}
		u := Usage{Requests: rng.Int64N(3), InputTokens: rng.Int64N(1 << uint(rng.IntN(40))),
			OutputTokens: rng.Int64N(1 << uint(rng.IntN(30))), Images: rng.Int64N(4)}
		if rng.IntN(2) == 0 {
			u.ImageSize, u.ImageQuality = "1024x1024", "high"
		}
		fast, ok := p.amountWithoutVideo(u)
		if exact := p.amountExact(u); !ok || fast != exact {
			t.Fatalf("case %d: %+v at %+v: int64 path %d (ok %v), exact %d", i, u, p, fast, ok, exact)
		}
	}
	for _, tc := range []struct {
		name string
		p    *Price
		u    Usage
		want Money
	}{
		{"half a micro-unit rounds up", &Price{InputTokens: 500_000}, Usage{InputTokens: 1}, 1},
		{"just under half rounds down", &Price{InputTokens: 499_999}, Usage{InputTokens: 1}, 0},
		{"past int64: saturated by the exact path", &Price{Request: Money(math.MaxInt64 / 2)}, Usage{Requests: 3}, math.MaxInt64},
	} {
		if got := tc.p.Amount(tc.u); got != tc.want {
			t.Errorf("%s: Amount = %d, want %d", tc.name, got, tc.want)
		}
	}
	if _, ok := (&Price{Request: Money(math.MaxInt64 / 2)}).amountWithoutVideo(Usage{Requests: 3}); ok {
		t.Error("the int64 path took an amount that overflows")
	}
	if _, ok := (&Price{Second: 400_000}).amountWithoutVideo(Usage{Requests: 1}); ok {
		t.Error("the int64 path took a price with video units")
	}
}

// A chat's estimate and settlement allocate nothing on the int64 path.
func TestAmountWithoutVideoAllocatesNothing(t *testing.T) {
	p := &Price{Model: "chat", InputTokens: 150_000, OutputTokens: 600_000}
	u := Usage{Requests: 1, InputTokens: 120, OutputTokens: 4096}
	if n := testing.AllocsPerRun(100, func() { p.Amount(u) }); n != 0 {
		t.Errorf("Amount allocated %v objects", n)
	}
}
