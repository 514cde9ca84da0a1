package billing

import (
	"testing"
)

// m reads a decimal amount for a test table.
func m(t *testing.T, s string) Money {
	t.Helper()
	v, err := ParseMoney(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func x(t *testing.T, s string) Multiplier {
	t.Helper()
	v, err := ParseMultiplier(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestArkTokenFormula checks Ark's token count on the example its pricing reference gives,
// 1920 × 1080 × 24 fps × 5 s / 1024 = 243,000 tokens, and on rows of its tables of output
// sizes and their tokens (480p and 720p as its pricing table gives them; 1080p from its sizes).
func TestArkTokenFormula(t *testing.T) {
	for _, tc := range []struct {
		u    Usage
		want int64
	}{
		{Usage{Width: 1920, Height: 1080, FPS: 24, VideoSeconds: 5}, 243_000},
		{Usage{Resolution: "720p", Ratio: "16:9", VideoSeconds: 5}, 102_960},
		{Usage{Resolution: "480p", Ratio: "16:9", VideoSeconds: 5}, 48_600},
		{Usage{Resolution: "720p", Ratio: "21:9", VideoSeconds: 10}, 225_600},
		{Usage{Resolution: "480p", Ratio: "4:3", VideoSeconds: 5}, 46_920},
		{Usage{Resolution: "720p", Ratio: "1:1", VideoSeconds: 10}, 216_000},
		// The 1080p row of Ark's sizes (see video_sizes.go): 1920×1088, not 1920×1080.
		{Usage{Resolution: "1080p", Ratio: "16:9", VideoSeconds: 5}, 244_800},
		{Usage{Resolution: "1080p", Ratio: "4:3", VideoSeconds: 5}, 243_360},
		{Usage{Resolution: "1080p", Ratio: "1:1", VideoSeconds: 5}, 243_000},
		{Usage{Resolution: "1080p", Ratio: "21:9", VideoSeconds: 5}, 236_640},
	} {
		got := videoTokens(tc.u)
		if !got.IsInt() || got.Num().Int64() != tc.want {
			t.Errorf("tokens of %+v = %s, want %d", tc.u, got.RatString(), tc.want)
		}
	}
}

// TestAmount prices every unit, band and multiplier against amounts computed by hand.
func TestAmount(t *testing.T) {
	seedance := &Price{Model: "seedance", VideoTokens: m(t, "2.50")}
	veo := &Price{Model: "veo-3", Second: m(t, "0.40"),
		SecondBands: map[string]Money{"1080p": m(t, "0.60"), "4k": m(t, "1.20")},
		Audio:       x(t, "1.5"), Draft: x(t, "0.5")}
	bandsOnly := &Price{Model: "bands", SecondBands: map[string]Money{"480p": m(t, "0.1"), "720p": m(t, "0.3")}}
	image := &Price{Model: "gpt-image-1", Image: m(t, "0.04"), ImageSizes: []ImagePrice{
		{Size: "1536x1024", Amount: m(t, "0.06")},
		{Size: "1024x1024", Quality: "high", Amount: m(t, "0.17")},
	}}
	sizesOnly := &Price{Model: "sizes", ImageSizes: []ImagePrice{
		{Size: "1024x1024", Amount: m(t, "0.02")}, {Size: "2048x2048", Amount: m(t, "0.08")},
	}}
	chat := &Price{Model: "gpt-4o-mini", InputTokens: m(t, "0.15"), OutputTokens: m(t, "0.60")}
	demo := &Price{Model: "demo-chat", Request: m(t, "0.001")}
	tiny := &Price{Model: "tiny", VideoTokens: 1, InputTokens: 1, OutputTokens: 1}

	for _, tc := range []struct {
		name  string
		price *Price
		u     Usage
		want  string
	}{
		// 243,000 tokens × 2.50 / 1,000,000 = 0.6075
		{"ark published example", seedance, Usage{Width: 1920, Height: 1080, FPS: 24, VideoSeconds: 5}, "0.6075"},
		// 102,960 × 2.5 / 1e6 = 0.2574
		{"ark 720p 16:9 5s from the size table", seedance, Usage{Resolution: "720p", Ratio: "16:9", VideoSeconds: 5}, "0.2574"},
		// reported tokens win: 108,900 × 2.5 / 1e6 = 0.27225
		{"ark reported completion_tokens", seedance, Usage{VideoTokens: 108_900, VideoSeconds: 5, Resolution: "1080p"}, "0.27225"},
		// 121 frames: 1248 × 704 × 121 / 1024 = 103,818 tokens → 0.259545
		{"ark frames", seedance, Usage{Resolution: "720p", Ratio: "16:9", VideoFrames: 121, FPS: 24}, "0.259545"},
		// 5 s output + 15 s reference = 20 s: 411,840 tokens → 1.0296
		{"ark reference video seconds", seedance, Usage{Resolution: "720p", Ratio: "16:9", VideoSeconds: 5, ReferenceVideoSeconds: 15}, "1.0296"},
		{"second, no band", veo, Usage{VideoSeconds: 5, Resolution: "720p"}, "2"},
		{"second, 1080p band", veo, Usage{VideoSeconds: 8, Resolution: "1080p"}, "4.8"},
		{"second, 4k band", veo, Usage{VideoSeconds: 10, Resolution: "4k"}, "12"},
		// 0.60 × 10 × 1.5 = 9
		{"audio multiplier", veo, Usage{VideoSeconds: 10, Resolution: "1080p", Audio: true}, "9"},
		// 0.40 × 4 × 0.5 = 0.8
		{"draft multiplier", veo, Usage{VideoSeconds: 4, Resolution: "480p", Draft: true}, "0.8"},
		// 0.60 × 10 × 1.5 × 0.5 = 4.5
		{"audio and draft", veo, Usage{VideoSeconds: 10, Resolution: "1080p", Audio: true, Draft: true}, "4.5"},
		// 121 / 24 s × 0.40 = 2.01666…, half up → 2.016667
		{"second from frames", veo, Usage{VideoFrames: 121, FPS: 24, Resolution: "720p"}, "2.016667"},
		{"band only model, named band", bandsOnly, Usage{VideoSeconds: 10, Resolution: "480p"}, "1"},
		{"band only model, other band costs the highest", bandsOnly, Usage{VideoSeconds: 10, Resolution: "1080p"}, "3"},
		{"image default", image, Usage{Images: 3, ImageSize: "2048x2048"}, "0.12"},
		{"image by size", image, Usage{Images: 2, ImageSize: "1536x1024"}, "0.12"},
		{"image by size and quality", image, Usage{Images: 1, ImageSize: "1024x1024", ImageQuality: "high"}, "0.17"},
		{"image size priced for another quality only", image, Usage{Images: 1, ImageSize: "1024x1024", ImageQuality: "low"}, "0.04"},
		{"image size without a price, no default", sizesOnly, Usage{Images: 2, ImageSize: "3840x2160"}, "0.16"},
		// 1000 × 0.15 / 1e6 + 500 × 0.60 / 1e6 = 0.00015 + 0.0003
		{"input and output tokens", chat, Usage{InputTokens: 1000, OutputTokens: 500}, "0.00045"},
		{"request", demo, Usage{Requests: 1}, "0.001"},
		{"request, three", demo, Usage{Requests: 3, InputTokens: 1000}, "0.003"},
		// 500,000 tokens at 0.000001 per million = 0.5 micro-units: half rounds up
		{"half a micro-unit rounds up", tiny, Usage{VideoTokens: 500_000}, "0.000001"},
		{"less than half rounds down", tiny, Usage{VideoTokens: 499_999}, "0"},
		// 0.4 + 0.4 micro-units: rounded once at the end, not per unit
		{"rounded once, at the end", tiny, Usage{InputTokens: 400_000, OutputTokens: 400_000}, "0.000001"},
		{"nothing used", veo, Usage{}, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.price.Amount(tc.u); got.String() != tc.want {
				t.Errorf("Amount = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPriceValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Price
	}{
		{"no model", Price{Request: 1}},
		{"no unit", Price{Model: "a"}},
		{"tokens and seconds", Price{Model: "a", VideoTokens: 1, Second: 1}},
		{"unknown band", Price{Model: "a", SecondBands: map[string]Money{"2k": 1}}},
		{"multiplier without video", Price{Model: "a", Request: 1, Audio: Micro}},
		{"bad size", Price{Model: "a", ImageSizes: []ImagePrice{{Size: "big", Amount: 1}}}},
		{"bad quality", Price{Model: "a", ImageSizes: []ImagePrice{{Size: "10x10", Quality: "ultra", Amount: 1}}}},
		{"size twice", Price{Model: "a", ImageSizes: []ImagePrice{{Size: "10x10", Amount: 1}, {Size: "10x10", Amount: 2}}}},
		{"negative", Price{Model: "a", Request: -1}},
	} {
		if err := tc.p.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", tc.name, tc.p)
		}
	}
	if _, err := NewTable("US D", nil); err == nil {
		t.Error("a currency with a space was accepted")
	}
	if _, err := NewTable("", []Price{{Model: "a", Request: 1}, {Model: "a", Request: 2}}); err == nil {
		t.Error("a model priced twice was accepted")
	}
}

// TestAmountChargesCacheWritesAtTheirRates: Anthropic bills input tokens written to its prompt
// cache at 1.25 × its input price for a 5-minute cache and 2 × for a 1-hour one (its published
// pricing). A price's cache_write_5m_tokens and cache_write_1h_tokens set those rates; without
// them they are 1.25 × and 2 × input_tokens. The writes are counted in InputTokens too: they are
// charged at the write rate instead of the input rate, never both.
func TestAmountChargesCacheWritesAtTheirRates(t *testing.T) {
	u := Usage{InputTokens: 1000, CacheWrite5mTokens: 400, CacheWrite1hTokens: 500, OutputTokens: 10}
	// Claude Sonnet's table: input 3, 5-minute writes 3.75, 1-hour writes 6, output 15 per million.
	set := &Price{Model: "c", InputTokens: m(t, "3"), OutputTokens: m(t, "15"), CacheWrite5mTokens: m(t, "3.75"), CacheWrite1hTokens: m(t, "6")}
	// 100 × 3 + 400 × 3.75 + 500 × 6 + 10 × 15 = 4950 per million.
	if got := set.Amount(u).String(); got != "0.00495" {
		t.Errorf("with its cache write prices: %s, want 0.00495", got)
	}
	if got := (&Price{Model: "c", InputTokens: m(t, "3"), OutputTokens: m(t, "15")}).Amount(u).String(); got != "0.00495" {
		t.Errorf("with the default rates of input 3: %s, want 0.00495", got)
	}
	// 1.25 × 0.000001 is rounded up to 0.000002 a million.
	tiny := &Price{Model: "c", InputTokens: 1}
	if got := tiny.Amount(Usage{InputTokens: 1_000_000, CacheWrite5mTokens: 1_000_000}); got != 2 {
		t.Errorf("a million 5-minute writes at input 0.000001: %d micro-units, want 2", got)
	}
	// Writes past the input reported count as input, no more: a broken report does not charge
	// more than all its input at the 1-hour rate.
	if got := set.Amount(Usage{InputTokens: 100, CacheWrite1hTokens: 900, CacheWrite5mTokens: 900}).String(); got != "0.0006" {
		t.Errorf("writes past the input: %s, want 0.0006 (100 × 6)", got)
	}
	// Exact and integer arithmetic agree.
	if a, b := set.amountExact(u), set.Amount(u); a != b {
		t.Errorf("amountExact %d, Amount %d", a, b)
	}
}
