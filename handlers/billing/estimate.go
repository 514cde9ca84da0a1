package billing

import "math"

// An Estimate is the upper bound held when a request or task is accepted: its amount, and the
// usage it assumed, whose values stand in for whatever the provider does not report when the
// amount is settled (see Price.Settle).
type Estimate struct {
	Amount Money
	Usage  Usage
}

// VideoTask is what a video task request says that its price depends on, as the client sent it
// (spec §2.2); a zero field takes the contract's default.
type VideoTask struct {
	// Duration in seconds; nil: the default 5; -1: the model chooses, estimated at the price's
	// max_seconds. 0 is within the contract's range (-1..15) but names no length, so the model
	// chooses there too: it is held as -1 is.
	Duration *int64
	// Frames, when given, win over Duration; they are counted at 24 fps.
	Frames int64
	// Resolution and Ratio; default 720p and 16:9. A ratio of "adaptive" counts as the ratio
	// with the most pixels at that resolution.
	Resolution, Ratio string
	// GenerateAudio; nil: the default true.
	GenerateAudio *bool
	Draft         bool
	// ReferenceVideos is the number of video_url items. Ark bills reference videos' seconds
	// like output seconds on token-priced models; their length is unknown at accept, so a
	// task with any is held for 15 more seconds, the longest total reference length Ark
	// takes (the settlement charges what Ark reports).
	ReferenceVideos int
	// Planned is the video the task's provider makes for the request, as the provider's
	// adaptor plans it; zero for an Ark task. It can be longer or larger than the request
	// says (Veo makes 8 seconds where the request names no length, Kling 720p where it asks
	// for 480p), and the hold counts it (see EstimateVideo).
	Planned PlannedVideo
}

// PlannedVideo is the length and resolution of the video a provider makes for a task: what the
// adaptor asks for, or the provider's default where it asks for nothing. A zero field is not
// known.
type PlannedVideo struct {
	Seconds    int64
	Resolution string
	// IgnoresAudio: the adaptor sends the provider no generate_audio, so the provider makes the
	// sound its model makes by default, whatever the request says: the hold and the settlement
	// count the request's generate_audio as not given (a silent video's lower price would charge
	// less than the video made). (No adaptor sends draft: the task handler clears it.)
	IgnoresAudio bool
}

// MaxReferenceVideoSeconds is the reference video length a task with reference videos is held for.
const MaxReferenceVideoSeconds = 15

// EstimateVideo is the hold of a video task: the larger of the estimates of the video the
// request asks for and of the video its provider makes (t.Planned, in place of the request's
// length and resolution), so that the hold is not below what the task settles at when the
// provider reports no length or size (a settlement then counts what the adaptor planned).
func (p *Price) EstimateVideo(t VideoTask) Estimate {
	if t.Planned.IgnoresAudio {
		t.GenerateAudio = nil
	}
	asked := p.estimateVideo(t)
	if t.Planned == (PlannedVideo{}) {
		return asked
	}
	made := t
	if s := t.Planned.Seconds; s > 0 {
		made.Duration, made.Frames = &s, 0
	}
	if t.Planned.Resolution != "" {
		made.Resolution = t.Planned.Resolution
	}
	if e := p.estimateVideo(made); e.Amount > asked.Amount {
		return e
	}
	return asked
}

// estimateVideo is the hold of the video t asks for.
func (p *Price) estimateVideo(t VideoTask) Estimate {
	u := Usage{Requests: 1, Resolution: t.Resolution, Ratio: t.Ratio, Draft: t.Draft, Audio: true}
	if u.Resolution == "" {
		u.Resolution = DefaultResolution
	}
	if u.Ratio == "" {
		u.Ratio = DefaultRatio
	}
	if t.GenerateAudio != nil {
		u.Audio = *t.GenerateAudio
	}
	switch {
	case t.Frames > 0:
		u.VideoFrames, u.FPS = t.Frames, DefaultFPS
	case t.Duration == nil:
		u.VideoSeconds = DefaultDuration
	case *t.Duration <= 0:
		u.VideoSeconds = p.maxSeconds()
	default:
		u.VideoSeconds = *t.Duration
	}
	if t.ReferenceVideos > 0 && p.VideoTokens > 0 {
		u.ReferenceVideoSeconds = MaxReferenceVideoSeconds
	}
	return Estimate{Amount: p.Amount(u), Usage: u}
}

// DefaultImageSize is the contract's default image edit size (spec §2.6).
const DefaultImageSize = "2048x2048"

// EstimateImages is the hold of an image request for n images (0: the default 1) of a size
// (empty: 2048x2048; "auto": the highest price of any size) and quality (empty, "auto" or one no
// price names: the highest price of any quality at that size; see Price.imagePrice).
func (p *Price) EstimateImages(n int64, size, quality string) Estimate {
	if n <= 0 {
		n = 1
	}
	if size == "" {
		size = DefaultImageSize
	}
	u := Usage{Requests: 1, Images: n, ImageSize: size, ImageQuality: quality}
	return Estimate{Amount: p.Amount(u), Usage: u}
}

// BytesPerToken is how tokens are estimated from bytes of text where no provider counted them:
// a request body's input (the body's JSON syntax makes it generous for text, and the settlement
// charges the tokens the provider reports), and the output of a stream cut before its usage was
// reported (handlers/usage). One token per 4 bytes is the common rule of thumb for English text.
const BytesPerToken = 4

// TokensOf is the tokens n bytes of text count for (BytesPerToken each, rounded up; 0 for none).
func TokensOf(n int64) int64 { return (max(n, 0) + BytesPerToken - 1) / BytesPerToken }

// EstimateText is the hold of a chat, responses or messages request whose body is bodyBytes
// long and that allows maxOutput output tokens (max_tokens, max_completion_tokens or
// max_output_tokens; 0: none given, the price's max_output).
func (p *Price) EstimateText(bodyBytes, maxOutput int64) Estimate {
	if maxOutput <= 0 {
		maxOutput = p.maxOutput()
	}
	u := Usage{Requests: 1, InputTokens: TokensOf(bodyBytes), OutputTokens: maxOutput}
	return Estimate{Amount: p.Amount(u), Usage: u}
}

// Request is what a pass-through request says about how much it may use, for its hold.
type Request struct {
	// Images is set for an image endpoint: the request makes N images of ImageSize and
	// ImageQuality.
	Images                  bool
	N                       int64
	ImageSize, ImageQuality string
	// BodyBytes is the request body's length; MaxOutput the output-token bound it names
	// (max_tokens, max_completion_tokens or max_output_tokens; 0: none).
	BodyBytes, MaxOutput int64
	// Video is set for a video create (a pass-through POST /v1/videos or /v1/video/generations):
	// the length and picture it asks for, held as a video task's.
	Video *VideoTask
	// Remix is set for a remix of a video (a pass-through POST /v1/videos/{id}/remix): the
	// source video's length and picture as far as they are known, held by EstimateRemix.
	Remix *Usage
	// InputOnly is set for an embedding (POST /v1/embeddings, Gemini's embedContent and
	// batchEmbedContents) or a rerank (POST /v1/rerank), which reads input tokens and makes no
	// output: it is held its input alone, whatever output limit its body names.
	InputOnly bool
	// QueryBytes and Documents are a rerank's (InputOnly): the length of its query and the
	// number of its documents. A rerank provider reads the query once per document (Jina's,
	// Voyage's and DashScope's usage counts query tokens × documents + the documents' tokens),
	// so its hold adds the query's tokens once more for each document past the first.
	QueryBytes, Documents int64
	// CacheWrites is set for a body that asks its provider to write its prompt to a cache
	// (Anthropic's cache_control), which is billed above the input price: its input is held at
	// the costliest of the input price and the two cache write prices, as any of its input
	// tokens may be such a write, or plain input.
	CacheWrites bool
}

// EstimateRequest is the hold of a pass-through request: a video task's for a video create or a
// remix, images for an image endpoint, else tokens (a model priced per request only is held its
// request price either way). A model priced by video units only (video_tokens or second, with no
// token or image unit), reached through an endpoint that is none of those (one the operator
// added, such as Veo's :predictLongRunning), is held as one video of which nothing is known (its
// max_seconds, at the resolution and ratio that cost the most, with sound) rather than as tokens
// its price does not charge: such an answer reports no video, so the request is charged that
// hold. So is a model priced by images only reached as text (chat, generateContent): N images
// (n or candidateCount, else 1) at the costliest size and quality. A text request with N above 1 (a chat completion's n) asks for N choices, each up to its
// output maximum, so its output is held N times. An embedding or a rerank (InputOnly) is held its
// input tokens (and request price) alone: it makes no output tokens, so an answer that reports no
// usage is charged its input estimate. A rerank's input is its body's tokens plus its query's
// once more for each document past the first: what its provider counts, query tokens ×
// documents + the documents' tokens, which the body's tokens alone fall short of.
func (p *Price) EstimateRequest(q Request) Estimate {
	if q.Video != nil {
		return p.EstimateVideo(*q.Video)
	}
	if q.Remix != nil {
		return p.EstimateRemix(*q.Remix)
	}
	if q.Images {
		return p.EstimateImages(q.N, q.ImageSize, q.ImageQuality)
	}
	if p.videoOnly() {
		// A video of which nothing is known, held as a remix of an unknown source is: an
		// upper bound of what it can cost.
		return p.EstimateRemix(Usage{})
	}
	if p.imageOnly() {
		// An image model reached as text (a chat completion or generateContent of a model that
		// answers with images): N images (n, candidateCount; else 1) of which nothing is
		// known, at the costliest size and quality, which its answer's usage does not lower.
		return p.EstimateImages(q.N, AutoImageSize, "")
	}
	if q.InputOnly {
		u := Usage{Requests: 1, InputTokens: rerankInput(TokensOf(q.BodyBytes), TokensOf(q.QueryBytes), q.Documents)}
		return Estimate{Amount: p.Amount(u), Usage: u}
	}
	maxOutput := q.MaxOutput
	if maxOutput <= 0 {
		maxOutput = p.maxOutput()
	}
	if q.N > 1 {
		if maxOutput > math.MaxInt64/q.N {
			maxOutput = math.MaxInt64 // Amount saturates
		} else {
			maxOutput *= q.N
		}
	}
	e := p.EstimateText(q.BodyBytes, maxOutput)
	if q.CacheWrites {
		// Held at the highest of the input price and the two write prices: an answer may
		// report its input as any of them (writes priced below input_tokens included).
		minutes, hour := p.cacheWritePrices()
		input := max(int64(p.InputTokens), 0)
		switch {
		case hour >= minutes && hour > input:
			e.Usage.CacheWrite1hTokens = e.Usage.InputTokens
		case minutes > hour && minutes > input:
			e.Usage.CacheWrite5mTokens = e.Usage.InputTokens
		}
		e.Amount = p.Amount(e.Usage)
	}
	return e
}

// imageOnly reports whether p prices images and no tokens or video: a request to its model that
// is not an image request would cost nothing as text.
func (p *Price) imageOnly() bool {
	image := p.Image > 0 || len(p.ImageSizes) > 0
	return image && p.InputTokens == 0 && p.OutputTokens == 0 && p.VideoTokens == 0 && p.Second == 0 && len(p.SecondBands) == 0
}

// videoOnly reports whether p prices video and no tokens or images: a request to its model that
// is not a video create would cost nothing as text.
func (p *Price) videoOnly() bool {
	video := p.VideoTokens > 0 || p.Second > 0 || len(p.SecondBands) > 0
	return video && p.InputTokens == 0 && p.OutputTokens == 0 && p.Image == 0 && len(p.ImageSizes) == 0
}

// rerankInput is the input tokens a rerank is held: body tokens (the query once, the documents,
// the JSON around them) plus query tokens for each document past the first, saturating at the
// largest int64 (Amount saturates too). With no documents (not a rerank) it is body.
func rerankInput(body, query, documents int64) int64 {
	if documents <= 1 || query <= 0 {
		return body
	}
	if query > (math.MaxInt64-body)/(documents-1) {
		return math.MaxInt64
	}
	return body + query*(documents-1)
}
