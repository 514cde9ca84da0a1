package billing

import (
	"math"
	"slices"
)

// Settle is the amount charged for a finished request or task: actual priced at p, where
// what the provider did not report takes the estimate's value (see Merge). A video length, frame
// rate or pixel size past what any video can be (see Possible) counts as not reported.
func (p *Price) Settle(estimated, actual Usage) Money {
	actual = p.Possible(actual)
	return p.Amount(plausibleTokens(Merge(estimated, actual), actual))
}

// MaxTokensOverVideo is how many times the video tokens of the video an answer reports (its
// length and picture, by Ark's formula) the answer's own token count may be. A provider's count
// differs a little from the formula at the published sizes (a 5-second 720p video billed 108,900
// tokens where 1248×704 at 24 fps gives 102,960); a count past twice the video it comes with is
// not a count of that video.
const MaxTokensOverVideo = 2

// plausibleTokens is settled (the estimate merged with reported) without the video tokens that
// reported gives beside its own length (seconds or frames) when they are more than
// MaxTokensOverVideo times the tokens of that length at the picture and frame rate it reports,
// at the largest it could be where it reports none (or a band without a published size here:
// MaxVideoSide square; MaxFPS), with the estimate's reference video seconds. Such tokens count
// as not reported, and the video is priced by the length and picture the answer says: what it
// honestly implies. Tokens reported alone stay, within Possible's bound.
func plausibleTokens(settled, reported Usage) Usage {
	if reported.VideoTokens <= 0 || reported.VideoSeconds <= 0 && reported.VideoFrames <= 0 {
		return settled
	}
	video := settled
	if _, band := videoSizes[reported.Resolution]; !band && reported.Width <= 0 {
		video.Width, video.Height = MaxVideoSide, MaxVideoSide // no picture, or none known here
	}
	if reported.FPS <= 0 {
		video.FPS = MaxFPS
	}
	w, h, frames := tokenFactors(video)
	bound, fits := mulNonNegative(max(w, 0), max(h, 0))
	for _, f := range []int64{max(frames, 0), MaxTokensOverVideo} {
		if fits {
			bound, fits = mulNonNegative(bound, f)
		}
	}
	if tokens, small := mulNonNegative(settled.VideoTokens, 1024); fits && (!small || tokens > bound) {
		settled.VideoTokens = 0 // tokens × 1024 past MaxTokensOverVideo × w × h × frames
	}
	return settled
}

// Bounds of a video as a provider may report it. Past them the report describes no video that
// the contract lets a client ask for (a broken or hostile answer, such as a 5-second task
// reported 10^18 seconds long), and is not charged for.
const (
	// MaxVideoSeconds is the contract's longest duration (spec: duration -1..15). A price's
	// max_seconds, when higher, is its model's.
	MaxVideoSeconds = 15
	// MaxFPS is the highest frame rate taken from a report.
	MaxFPS = 60
	// MaxVideoSide is the longest side in pixels taken from a report, as the OpenAI-style
	// front's size takes it.
	MaxVideoSide = 8192
)

// Possible is actual without what no video can be: a frame rate past MaxFPS, a length longer
// than MaxVideoSeconds (or the price's max_seconds, when higher) in seconds or frames, a width
// or height past MaxVideoSide, video tokens past those of the largest such video (see
// maxVideoTokens). Each such group is dropped whole, as not reported, so that Merge takes the
// estimate's value for it: an impossible size drops the picture (resolution and ratio too, which
// an adaptor names from that size); impossible tokens are priced as the estimate's video, or as
// the length and picture the report gives, when it gives them.
func (p *Price) Possible(actual Usage) Usage {
	longest := max(int64(MaxVideoSeconds), p.maxSeconds())
	if actual.VideoTokens > maxVideoTokens(longest) {
		actual.VideoTokens = 0
	}
	if actual.FPS > MaxFPS {
		actual.FPS = 0
	}
	fps := actual.FPS
	if fps <= 0 {
		fps = DefaultFPS
	}
	if actual.VideoSeconds > longest || actual.VideoFrames > longest*fps {
		actual.VideoSeconds, actual.VideoFrames, actual.FPS = 0, 0, 0
	}
	if actual.Width > MaxVideoSide || actual.Height > MaxVideoSide {
		actual.Width, actual.Height, actual.Resolution, actual.Ratio = 0, 0, "", ""
	}
	return actual
}

// Merge fills what actual does not report from estimated. Fields that describe one thing
// travel together, so that a reported value is never priced with an estimated neighbour that
// contradicts it:
//   - the length (VideoSeconds, VideoFrames, FPS) is actual's when it reports seconds or frames;
//   - the picture (Resolution, Ratio, Width, Height) is actual's when it reports a resolution or
//     a size, each field it leaves empty taking the estimate's;
//   - VideoTokens are actual's when reported; else the estimate's only when actual reports
//     neither length nor picture (otherwise they are computed from what it reports);
//   - ImageSize and ImageQuality are the request's (the estimate's) when it named them (a
//     WIDTHxHEIGHT size; low, medium or high): an answer that says it made cheaper images than
//     were asked for does not lower the charge, nor one that says more raise it past the hold.
//     Only what the request left open (auto, none) is the answer's, when it reports it;
//   - ReferenceVideoSeconds, Images, InputTokens, OutputTokens and Requests each take the
//     estimate's when zero, except OutputTokens when OutputReported;
//   - Audio and Draft are the request's (the estimate's), or true when actual says so.
func Merge(estimated, actual Usage) Usage {
	m := actual
	lengthReported := actual.VideoSeconds > 0 || actual.VideoFrames > 0
	if !lengthReported {
		m.VideoSeconds, m.VideoFrames, m.FPS = estimated.VideoSeconds, estimated.VideoFrames, estimated.FPS
	}
	pictureReported := actual.Resolution != "" || actual.Width > 0
	if pictureReported {
		m.Resolution = fill(actual.Resolution, estimated.Resolution)
		m.Ratio = fill(actual.Ratio, estimated.Ratio)
		if actual.Width <= 0 || actual.Height <= 0 {
			m.Width, m.Height = 0, 0 // the published size of the reported resolution
		}
	} else {
		m.Resolution, m.Ratio, m.Width, m.Height = estimated.Resolution, estimated.Ratio, estimated.Width, estimated.Height
	}
	if actual.VideoTokens <= 0 && !lengthReported && !pictureReported {
		m.VideoTokens = estimated.VideoTokens
	}
	m.ReferenceVideoSeconds = fillInt(actual.ReferenceVideoSeconds, estimated.ReferenceVideoSeconds)
	m.Images = fillInt(actual.Images, estimated.Images)
	m.ImageSize, m.ImageQuality = estimated.ImageSize, estimated.ImageQuality
	if !imageSize.MatchString(estimated.ImageSize) {
		m.ImageSize = fill(actual.ImageSize, estimated.ImageSize)
	}
	if !slices.Contains(ImageQualities, estimated.ImageQuality) {
		m.ImageQuality = fill(actual.ImageQuality, estimated.ImageQuality)
	}
	m.InputTokens = fillInt(actual.InputTokens, estimated.InputTokens)
	if actual.InputTokens <= 0 {
		// The input not reported is the estimate's, cache writes and all.
		m.CacheWrite5mTokens, m.CacheWrite1hTokens = estimated.CacheWrite5mTokens, estimated.CacheWrite1hTokens
	}
	if !actual.OutputReported {
		m.OutputTokens = fillInt(actual.OutputTokens, estimated.OutputTokens)
	}
	m.Requests = fillInt(actual.Requests, estimated.Requests)
	m.Audio = estimated.Audio || actual.Audio
	m.Draft = estimated.Draft || actual.Draft
	return m
}

func fill(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func fillInt(n, fallback int64) int64 {
	if n <= 0 {
		return fallback
	}
	return n
}

// maxVideoTokens is the most video tokens a task can bill under Ark's formula, width × height ×
// fps × seconds / 1024, at every bound a report is held to: sides of MaxVideoSide, MaxFPS, and
// longest seconds of output plus MaxReferenceVideoSeconds of reference video (Ark bills a
// reference video's seconds with the output): 3,932,160 tokens a second, 117,964,800 for 15 s.
// A product past int64 bounds nothing.
func maxVideoTokens(longest int64) int64 {
	const perSecond = MaxVideoSide * MaxVideoSide / 1024 * MaxFPS
	seconds := longest + MaxReferenceVideoSeconds
	if seconds < 0 || seconds > math.MaxInt64/perSecond {
		return math.MaxInt64
	}
	return perSecond * seconds
}
