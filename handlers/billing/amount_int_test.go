package billing

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The int64 path of Amount gives what the exact big.Rat path gives, on random usages and
// prices without video units (rounding half up included), and leaves to it what would
// overflow, which it saturates.
func TestAmountIntIsExact(t *testing.T) {
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
		fast, ok := p.amountInt(u)
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
	if _, ok := (&Price{Request: Money(math.MaxInt64 / 2)}).amountInt(Usage{Requests: 3}); ok {
		t.Error("the int64 path took an amount that overflows")
	}
}

// The int64 path of Amount gives what big.Rat gives for video prices too: token and second
// prices, resolution bands, audio and draft multipliers with the awkward denominators of any
// micro-unit, frames at odd frame rates, reported tokens and sizes, reference videos, beside
// request and token prices; and it takes nearly all of them (the rest overflow a uint64
// fraction and go to big.Rat).
func TestVideoAmountIntIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 24)) // fixed: the same cases every run
	resolutions := []string{"", "480p", "720p", "1080p", "4k", "8k"}
	ratios := []string{"", "16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "adaptive"}
	const cases = 50000
	taken := 0
	for i := range cases {
		p := &Price{Model: "v", Request: Money(rng.Int64N(2) * rng.Int64N(1_000_000))}
		if rng.IntN(2) == 0 {
			p.VideoTokens = Money(1 + rng.Int64N(10_000_000))
		} else {
			p.Second = Money(rng.Int64N(2) * rng.Int64N(2_000_000))
			if rng.IntN(2) == 0 || p.Second == 0 {
				p.SecondBands = map[string]Money{"1080p": Money(1 + rng.Int64N(3_000_000)), "4k": Money(1 + rng.Int64N(9_000_000))}
			}
		}
		if rng.IntN(2) == 0 {
			p.Audio = Multiplier(1 + rng.Int64N(3_000_000))
		}
		if rng.IntN(2) == 0 {
			p.Draft = Multiplier(1 + rng.Int64N(1_000_000))
		}
		u := Usage{Requests: rng.Int64N(2), Resolution: resolutions[rng.IntN(len(resolutions))],
			Ratio: ratios[rng.IntN(len(ratios))], Audio: rng.IntN(2) == 0, Draft: rng.IntN(2) == 0}
		switch rng.IntN(4) {
		case 0:
			u.VideoSeconds = rng.Int64N(17) - 1
		case 1:
			u.VideoFrames, u.FPS = rng.Int64N(400), rng.Int64N(61)
		case 2:
			u.VideoTokens = rng.Int64N(1 << uint(rng.IntN(40)))
		default:
			u.VideoSeconds, u.Width, u.Height = rng.Int64N(16), rng.Int64N(4000), rng.Int64N(4000)
		}
		if rng.IntN(4) == 0 {
			u.ReferenceVideoSeconds = rng.Int64N(16)
		}
		fast, ok := p.amountInt(u)
		if exact := p.amountExact(u); ok && fast != exact {
			t.Fatalf("case %d: %+v at %+v: int64 path %d, exact %d", i, u, p, fast, exact)
		}
		if ok {
			taken++
		}
		if got, exact := p.Amount(u), p.amountExact(u); got != exact {
			t.Fatalf("case %d: %+v at %+v: Amount %d, exact %d", i, u, p, got, exact)
		}
	}
	if taken < cases*9/10 {
		t.Errorf("the int64 path took %d of %d video cases; want nine in ten at least", taken, cases)
	}
	for _, tc := range []struct {
		name string
		p    *Price
		u    Usage
		want Money
	}{
		// Ark's published example: 1920×1080×24×5/1024 = 243,000 tokens at 2.50 per million.
		{"Ark's token formula", &Price{VideoTokens: 2_500_000}, Usage{VideoSeconds: 5, Width: 1920, Height: 1080}, 607_500},
		// 10 frames at 24 fps of 0.000001 a second: 0.4166… micro-units, rounded down; at
		// 12 fps, 0.8333…, rounded up; 12 frames at 24 fps, exactly half, rounded up.
		{"a fraction under half", &Price{Second: 1}, Usage{VideoFrames: 10, FPS: 24}, 0},
		{"a fraction over half", &Price{Second: 1}, Usage{VideoFrames: 10, FPS: 12}, 1},
		{"exactly half", &Price{Second: 1}, Usage{VideoFrames: 12, FPS: 24}, 1},
		{"audio and draft multipliers", &Price{Second: 400_000, Audio: 1_500_000, Draft: 500_000}, Usage{VideoSeconds: 5, Audio: true, Draft: true}, 1_500_000},
		{"past int64: saturated", &Price{VideoTokens: Money(math.MaxInt64 / 2)}, Usage{VideoTokens: 1 << 40}, math.MaxInt64},
	} {
		if got := tc.p.Amount(tc.u); got != tc.want {
			t.Errorf("%s: Amount = %d, want %d", tc.name, got, tc.want)
		}
		if got := tc.p.amountExact(tc.u); got != tc.want {
			t.Errorf("%s: the exact path says %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A chat's and a video task's estimate and settlement allocate nothing on the int64 path.
func TestAmountIntAllocatesNothing(t *testing.T) {
	chat := &Price{Model: "chat", InputTokens: 150_000, OutputTokens: 600_000}
	u := Usage{Requests: 1, InputTokens: 120, OutputTokens: 4096}
	if n := testing.AllocsPerRun(100, func() { chat.Amount(u) }); n != 0 {
		t.Errorf("a chat's Amount allocated %v objects", n)
	}
	video := &Price{Model: "video", VideoTokens: 2_500_000, Audio: 1_500_000}
	dur := int64(5)
	if n := testing.AllocsPerRun(100, func() { video.EstimateVideo(VideoTask{Duration: &dur}) }); n != 0 {
		t.Errorf("a video estimate allocated %v objects", n)
	}
	est := video.EstimateVideo(VideoTask{Duration: &dur})
	if n := testing.AllocsPerRun(100, func() { video.Settle(est.Usage, Usage{VideoTokens: 103_000}) }); n != 0 {
		t.Errorf("a video settlement allocated %v objects", n)
	}
}
