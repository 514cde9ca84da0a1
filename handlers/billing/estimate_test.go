package billing

import (
	"math"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// TestEstimateVideo checks the hold of a video task against hand-computed amounts.
func TestEstimateVideo(t *testing.T) {
	seedance := &Price{Model: "seedance", VideoTokens: m(t, "2.50")}
	veo := &Price{Model: "veo-3", Second: m(t, "0.40"), SecondBands: map[string]Money{"1080p": m(t, "0.60")}, Audio: x(t, "1.5"), Draft: x(t, "0.5")}
	short := &Price{Model: "short", Second: m(t, "1"), MaxSeconds: 10}
	for _, tc := range []struct {
		name  string
		price *Price
		task  VideoTask
		want  string
	}{
		// contract defaults: 5 s, 720p, 16:9 → 102,960 tokens × 2.5 / 1e6
		{"tokens, defaults", seedance, VideoTask{}, "0.2574"},
		// adaptive at 720p counts as 21:9, 1504 × 640, the most pixels: 112,800 tokens
		{"tokens, adaptive ratio", seedance, VideoTask{Ratio: "adaptive"}, "0.282"},
		// 1080p 9:16 10 s: 1088 × 1920 × 24 × 10 / 1024 = 489,600 tokens
		{"tokens, 1080p 9:16 10 s", seedance, VideoTask{Resolution: "1080p", Ratio: "9:16", Duration: ptr[int64](10)}, "1.224"},
		// frames win over duration: 121 frames at 720p 16:9 = 103,818 tokens
		{"tokens, frames win", seedance, VideoTask{Frames: 121, Duration: ptr[int64](10)}, "0.259545"},
		// a reference video adds 15 s: 20 s at 720p 16:9 = 411,840 tokens
		{"tokens, reference video", seedance, VideoTask{ReferenceVideos: 2}, "1.0296"},
		// audio defaults on: 0.40 × 5 × 1.5
		{"seconds, defaults with audio", veo, VideoTask{}, "3"},
		{"seconds, audio off", veo, VideoTask{GenerateAudio: ptr(false)}, "2"},
		// duration -1 → max_seconds 15 (default): 0.60 × 15 × 1.5
		{"seconds, -1 at the default maximum", veo, VideoTask{Duration: ptr[int64](-1), Resolution: "1080p"}, "13.5"},
		{"seconds, -1 at max_seconds", short, VideoTask{Duration: ptr[int64](-1)}, "10"},
		// 0 names no length: held as -1, not as nothing
		{"seconds, 0 at the default maximum", veo, VideoTask{Duration: ptr[int64](0), Resolution: "1080p"}, "13.5"},
		// draft and audio: 0.40 × 5 × 1.5 × 0.5
		{"seconds, draft", veo, VideoTask{Draft: true, Resolution: "480p"}, "1.5"},
		// reference videos do not lengthen a per-second task
		{"seconds, reference video", short, VideoTask{ReferenceVideos: 1}, "5"},
		// the provider makes 8 s where the request names none (Veo): 0.40 × 8 × 1.5
		{"seconds, the provider's longer default", veo, VideoTask{Planned: PlannedVideo{Seconds: 8, Resolution: "720p"}}, "4.8"},
		// frames (29 at 24 fps) the provider ignores, making 8 s: the 8 s
		{"seconds, planned over frames", veo, VideoTask{Frames: 29, Planned: PlannedVideo{Seconds: 8}}, "4.8"},
		// the provider makes 720p where 480p was asked (Kling's std mode), at 1080p's price where
		// 1080p was asked: the costlier video
		{"seconds, the provider's larger picture", veo, VideoTask{Resolution: "1080p", Planned: PlannedVideo{Seconds: 5, Resolution: "720p"}}, "4.5"},
		// the provider makes less than asked (Hailuo makes 6 s when asked for 8): the request's 8 s
		{"seconds, the request's longer length", veo, VideoTask{Duration: ptr[int64](8), Planned: PlannedVideo{Seconds: 6}}, "4.8"},
		// generate_audio false that the adaptor never sends (Veo through the Gemini API): the video
		// with sound, 0.40 × 8 × 1.5, not 0.40 × 8
		{"seconds, silence the provider never hears", veo, VideoTask{GenerateAudio: ptr(false), Planned: PlannedVideo{Seconds: 8, IgnoresAudio: true}}, "4.8"},
		// generate_audio sent (DashScope): 0.40 × 5, silent
		{"seconds, silence sent", veo, VideoTask{GenerateAudio: ptr(false), Planned: PlannedVideo{Seconds: 5}}, "2"},
		// token-priced: 8 s at 720p 16:9 = 164,736 tokens × 2.5 / 1e6
		{"tokens, the provider's longer default", seedance, VideoTask{Planned: PlannedVideo{Seconds: 8}}, "0.41184"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.price.EstimateVideo(tc.task); got.Amount.String() != tc.want {
				t.Errorf("estimate = %s, want %s (usage %+v)", got.Amount, tc.want, got.Usage)
			}
		})
	}
}

func TestEstimateImagesAndText(t *testing.T) {
	image := &Price{Model: "img", Image: m(t, "0.04"), ImageSizes: []ImagePrice{{Size: "1024x1024", Quality: "high", Amount: m(t, "0.17")}}}
	if got := image.EstimateImages(0, "", "auto").Amount.String(); got != "0.04" {
		t.Errorf("one default image = %s, want 0.04", got)
	}
	if got := image.EstimateImages(4, "1024x1024", "high").Amount.String(); got != "0.68" {
		t.Errorf("four high 1024x1024 images = %s, want 0.68", got)
	}
	chat := &Price{Model: "chat", InputTokens: m(t, "1"), OutputTokens: m(t, "2"), MaxOutput: 1000}
	// 1001 bytes → 251 input tokens (0.000251); 300 output tokens × 2 / 1e6 = 0.0006
	if got := chat.EstimateText(1001, 300).Amount.String(); got != "0.000851" {
		t.Errorf("text with a maximum = %s, want 0.000851", got)
	}
	// no maximum: max_output 1000 → 0.002 + 0.000251
	if got := chat.EstimateText(1001, 0).Amount.String(); got != "0.002251" {
		t.Errorf("text without a maximum = %s, want 0.002251", got)
	}
	if got := chat.EstimateRequest(Request{BodyBytes: 1001, MaxOutput: 300}).Amount.String(); got != "0.000851" {
		t.Errorf("a text request = %s, want 0.000851", got)
	}
	// n 3 choices of up to 300 tokens: 900 × 2 / 1e6 = 0.0018, + 0.000251
	if got := chat.EstimateRequest(Request{BodyBytes: 1001, MaxOutput: 300, N: 3}).Amount.String(); got != "0.002051" {
		t.Errorf("a text request for 3 choices = %s, want 0.002051", got)
	}
	// n 2 without a maximum: 2 × max_output 1000 × 2 / 1e6 = 0.004, + 0.000251
	if got := chat.EstimateRequest(Request{BodyBytes: 1001, N: 2}).Amount.String(); got != "0.004251" {
		t.Errorf("a text request for 2 choices without a maximum = %s, want 0.004251", got)
	}
	if got := chat.EstimateRequest(Request{BodyBytes: 1, MaxOutput: math.MaxInt64 / 2, N: 3}).Amount; got != Money(math.MaxInt64) {
		t.Errorf("a text request whose choices overflow = %d, want saturated", got)
	}
	if got := image.EstimateRequest(Request{Images: true, N: 2, BodyBytes: 1 << 20}).Amount.String(); got != "0.08" {
		t.Errorf("an image request of 2 = %s, want 0.08", got)
	}
	// no max_output either: 4096 × 2 / 1e6 = 0.008192, + 0.000001 for 4 bytes
	noMax := &Price{Model: "c", InputTokens: m(t, "1"), OutputTokens: m(t, "2")}
	if got := noMax.EstimateText(4, 0).Amount.String(); got != "0.008193" {
		t.Errorf("text with no max anywhere = %s, want 0.008193", got)
	}
}

// TestSettle settles estimates from what providers report: longer and shorter than estimated,
// reported tokens, a reported resolution, and nothing reported.
func TestSettle(t *testing.T) {
	seedance := &Price{Model: "seedance", VideoTokens: m(t, "2.50")}
	veo := &Price{Model: "veo-3", Second: m(t, "0.40"), SecondBands: map[string]Money{"1080p": m(t, "0.60")}}
	chat := &Price{Model: "chat", InputTokens: m(t, "1"), OutputTokens: m(t, "2")}
	img := &Price{Model: "img", Image: m(t, "0.04")}

	veoEst := veo.EstimateVideo(VideoTask{}) // 5 s at 720p: 2
	seedEst := seedance.EstimateVideo(VideoTask{Duration: ptr[int64](-1)})
	for _, tc := range []struct {
		name   string
		price  *Price
		est    Estimate
		actual Usage
		want   string
	}{
		{"longer than estimated", veo, veoEst, Usage{VideoSeconds: 8}, "3.2"},
		{"shorter than estimated", veo, veoEst, Usage{VideoSeconds: 3}, "1.2"},
		{"reported resolution, estimated length", veo, veoEst, Usage{Resolution: "1080p"}, "3"},
		{"nothing reported: the estimate", veo, veoEst, Usage{}, "2"},
		// 15 s estimated (duration -1); Ark reports 108,900 completion tokens
		{"ark completion tokens", seedance, seedEst, Usage{VideoTokens: 108_900}, "0.27225"},
		// Ark reports duration 6 and 720p, no tokens: 1248 × 704 × 24 × 6 / 1024 = 123,552 tokens
		{"ark duration without tokens", seedance, seedEst, Usage{VideoSeconds: 6, Resolution: "720p"}, "0.30888"},
		// 100 input, 20 output tokens; the estimate's 4096 output tokens are not used
		{"text usage", chat, chat.EstimateText(4000, 0), Usage{InputTokens: 100, OutputTokens: 20}, "0.00014"},
		{"images returned", img, img.EstimateImages(4, "", ""), Usage{Images: 2}, "0.08"},
		// an answer that reports 0 output tokens (a content filter) is charged its 100 input
		// tokens only, not the estimate's 4096 output tokens (0.008192 more)
		{"zero output tokens reported", chat, chat.EstimateText(4000, 0), Usage{InputTokens: 100, OutputReported: true}, "0.0001"},
		{"output not reported: the estimate", chat, chat.EstimateText(4000, 0), Usage{InputTokens: 100}, "0.008292"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.price.Settle(tc.est.Usage, tc.actual); got.String() != tc.want {
				t.Errorf("Settle = %s, want %s", got, tc.want)
			}
		})
	}
	if veoEst.Amount.String() != "2" {
		t.Fatalf("veo estimate = %s, want 2", veoEst.Amount)
	}
}

// TestUnsizedVideoRequest: a request to a model priced by video only that is not a video create
// (an endpoint the operator added, such as Veo's :predictLongRunning) is held as the model's
// longest video at the resolution it prices highest, with sound; a model with a token price too
// is held as text.
func TestUnsizedVideoRequest(t *testing.T) {
	text := Request{BodyBytes: 100, MaxOutput: 10}
	for _, tc := range []struct {
		price Price
		want  Money
	}{
		{Price{Model: "veo", Second: 400_000, MaxSeconds: 8}, 3_200_000},                                                  // 8 s × 0.40
		{Price{Model: "veo", Second: 400_000, SecondBands: map[string]Money{"1080p": 600_000}}, 9_000_000},                // 15 s × 0.60
		{Price{Model: "veo", Second: 400_000, SecondBands: map[string]Money{"720p": 300_000}}, 6_000_000},                 // 15 s × 0.40 (480p)
		{Price{Model: "veo", SecondBands: map[string]Money{"480p": 100_000, "4k": 200_000}, Audio: 1_500_000}, 4_500_000}, // 15 s × 0.20 × 1.5
		{Price{Model: "veo", Second: 400_000, Request: 10_000, MaxSeconds: 4}, 1_610_000},
		{Price{Model: "both", Second: 400_000, OutputTokens: 1_000_000}, 10}, // text: 10 output tokens at 1 a million
	} {
		if got := tc.price.EstimateRequest(text); got.Amount != tc.want {
			t.Errorf("%+v: held %s, want %s", tc.price, got.Amount, tc.want)
		}
	}
}

// TestImageModelAsText: a request to a model priced by images only that is not an image request
// (a chat completion or generateContent of a model that answers with images) is held as N images
// (1 when it names none) at the costliest size and quality it prices; a model with a token
// price too is held as text.
func TestImageModelAsText(t *testing.T) {
	sizes := []ImagePrice{{Size: "1024x1024", Quality: "high", Amount: 170_000}}
	for _, tc := range []struct {
		price Price
		q     Request
		want  Money
	}{
		{Price{Model: "img", Image: 40_000}, Request{BodyBytes: 100}, 40_000},
		{Price{Model: "img", Image: 40_000, ImageSizes: sizes}, Request{BodyBytes: 100}, 170_000},
		{Price{Model: "img", Image: 40_000, ImageSizes: sizes}, Request{BodyBytes: 100, N: 3, MaxOutput: 10}, 510_000},
		{Price{Model: "img", Image: 40_000, Request: 5_000}, Request{BodyBytes: 100}, 45_000},
		{Price{Model: "both", Image: 40_000, OutputTokens: 1_000_000}, Request{BodyBytes: 100, MaxOutput: 10}, 10}, // text
	} {
		if got := tc.price.EstimateRequest(tc.q); got.Amount != tc.want {
			t.Errorf("%+v, %+v: held %s, want %s", tc.price, tc.q, got.Amount, tc.want)
		}
	}
}

// TestEstimateEmbeddingHoldsNoOutput: an embedding (InputOnly) is held its input tokens and request price,
// never output tokens, whatever output limit its body names; a generation without a limit is
// still held the price's max_output.
func TestEstimateEmbeddingHoldsNoOutput(t *testing.T) {
	p := &Price{Model: "e", InputTokens: m(t, "1000"), OutputTokens: m(t, "2000"), Request: m(t, "0.5")}
	// 40 bytes → 10 input tokens: 0.01, + 0.5 for the request.
	for _, q := range []Request{{InputOnly: true, BodyBytes: 40}, {InputOnly: true, BodyBytes: 40, MaxOutput: 99, N: 3}} {
		e := p.EstimateRequest(q)
		if e.Amount.String() != "0.51" || e.Usage.OutputTokens != 0 || e.Usage.InputTokens != 10 {
			t.Errorf("embedding %+v held %s (%+v), want 0.51 for 10 input tokens", q, e.Amount, e.Usage)
		}
		// Settled without usage: the input estimate; with a reported input, that input.
		if got := p.Settle(e.Usage, Usage{}).String(); got != "0.51" {
			t.Errorf("embedding settled without usage at %s, want 0.51", got)
		}
		if got := p.Settle(e.Usage, Usage{InputTokens: 3, OutputReported: true}).String(); got != "0.503" {
			t.Errorf("embedding settled at 3 reported input tokens: %s, want 0.503", got)
		}
	}
	// A generation (not InputOnly) that names no limit is still held max_output (4096) tokens.
	if got := p.EstimateRequest(Request{BodyBytes: 40}).Amount.String(); got != "8.702" {
		t.Errorf("generation held %s, want 8.702", got)
	}
}

// TestEstimateRerankHoldsQueryPerDocument: a rerank's provider counts its query once per
// document (query tokens × documents + the documents' tokens), so its hold adds the query's
// tokens once more for each document past the first: settling at what the provider reports then
// never charges past the hold, and a limited account cannot go below zero by (documents − 1) ×
// query tokens for each rerank in flight.
func TestEstimateRerankHoldsQueryPerDocument(t *testing.T) {
	p := &Price{Model: "r", InputTokens: m(t, "1000")}
	// A 400-byte query (100 tokens) and 100 one-token documents in a 900-byte body (225 tokens).
	// The provider counts 100 × 100 + 100 = 10,100 tokens.
	q := Request{InputOnly: true, BodyBytes: 900, QueryBytes: 400, Documents: 100}
	e := p.EstimateRequest(q)
	if e.Usage.InputTokens != 225+100*99 || e.Amount.String() != "10.125" {
		t.Errorf("rerank held %s for %d input tokens; want 10.125 for 10,125 (225 + 100 × 99)", e.Amount, e.Usage.InputTokens)
	}
	if reported := int64(100*100 + 100); e.Usage.InputTokens < reported {
		t.Errorf("rerank held %d input tokens, below the %d its provider counts", e.Usage.InputTokens, reported)
	}
	// One document, or none read: the body's tokens, as an embedding's.
	for _, docs := range []int64{0, 1} {
		if got := p.EstimateRequest(Request{InputOnly: true, BodyBytes: 900, QueryBytes: 400, Documents: docs}).Usage.InputTokens; got != 225 {
			t.Errorf("rerank of %d documents held %d input tokens, want 225", docs, got)
		}
	}
	// Past an int64: the largest, which no balance covers.
	if got := p.EstimateRequest(Request{InputOnly: true, BodyBytes: 900, QueryBytes: math.MaxInt64 / 2, Documents: 1 << 20}).Amount; got != Money(math.MaxInt64) {
		t.Errorf("a rerank past an int64 held %d, want the largest", got)
	}
}

// TestEstimateCacheWritesHoldsInputAtTheWriteRate: a body that marks a prompt cache point is held
// its input at the costlier cache write rate (2 × input by default, for a 1-hour cache), so that
// the settlement of its writes does not pass the hold; an answer that reports no input is
// charged that estimate, writes and all.
func TestEstimateCacheWritesHoldsInputAtTheWriteRate(t *testing.T) {
	p := &Price{Model: "c", InputTokens: m(t, "3"), OutputTokens: m(t, "15")}
	// 4000 bytes: 1000 input tokens; 100 output tokens.
	plain := p.EstimateRequest(Request{BodyBytes: 4000, MaxOutput: 100})
	cached := p.EstimateRequest(Request{BodyBytes: 4000, MaxOutput: 100, CacheWrites: true})
	if plain.Amount.String() != "0.0045" || cached.Amount.String() != "0.0075" {
		t.Errorf("held %s without cache_control and %s with it; want 0.0045 and 0.0075 (1000 × 6 + 100 × 15 per million)", plain.Amount, cached.Amount)
	}
	if got := p.Settle(cached.Usage, Usage{OutputTokens: 10, OutputReported: true}).String(); got != "0.00615" {
		t.Errorf("settled without input reported: %s; want 0.00615 (the estimate's input at the write rate, 10 output tokens)", got)
	}
	if got := p.Settle(cached.Usage, Usage{InputTokens: 1000, OutputTokens: 10, OutputReported: true}).String(); got != "0.00315" {
		t.Errorf("settled with 1000 input tokens and no writes reported: %s; want 0.00315", got)
	}
	// A price whose 5-minute writes cost more than its 1-hour ones holds at those.
	odd := &Price{Model: "c", InputTokens: m(t, "3"), CacheWrite5mTokens: m(t, "9"), CacheWrite1hTokens: m(t, "4")}
	if got := odd.EstimateRequest(Request{BodyBytes: 4000, MaxOutput: 100, CacheWrites: true}).Amount.String(); got != "0.009" {
		t.Errorf("held %s; want 0.009 (1000 × 9 per million)", got)
	}
}
