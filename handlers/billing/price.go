package billing

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
)

// Price is what one model costs, in the gateway's currency. A model is priced by any of the
// units below; the amount of a request or task is the sum of the units it uses, computed
// exactly and rounded once, half up, to the micro-unit (see Price.Amount). A unit left at zero
// is not charged.
type Price struct {
	// Model is the model id as clients name it.
	Model string `json:"model"`

	// VideoTokens is the price of one million video tokens. Ark bills a video as
	// width × height × fps × seconds / 1024 tokens (reference videos' seconds count too).
	// A model is priced by video_tokens or by second, not both.
	VideoTokens Money `json:"video_tokens,omitempty"`
	// Second is the price of one second of output video, at any resolution that
	// SecondBands does not name.
	Second Money `json:"second,omitempty"`
	// SecondBands override Second for a resolution: "480p", "720p", "1080p" or "4k".
	SecondBands map[string]Money `json:"second_bands,omitempty"`
	// Audio multiplies the video amount when the task generates sound (generate_audio,
	// which defaults to true). Default: 1.
	Audio Multiplier `json:"audio,omitempty"`
	// Draft multiplies the video amount of a draft task. Default: 1.
	Draft Multiplier `json:"draft,omitempty"`

	// Image is the price of one image, at a size (and quality) that ImageSizes does not name.
	Image Money `json:"image,omitempty"`
	// ImageSizes price images of one size, optionally of one quality.
	ImageSizes []ImagePrice `json:"image_sizes,omitempty"`

	// InputTokens and OutputTokens are the prices of one million input and output tokens.
	InputTokens  Money `json:"input_tokens,omitempty"`
	OutputTokens Money `json:"output_tokens,omitempty"`
	// CacheWrite5mTokens and CacheWrite1hTokens are the prices of one million input tokens
	// written to a prompt cache for 5 minutes and for 1 hour, which Anthropic reports apart
	// (cache_creation_input_tokens, split by cache_creation) and bills above its input price.
	// Default: Anthropic's published rates, 1.25 × and 2 × InputTokens (rounded up to the
	// micro-unit).
	CacheWrite5mTokens Money `json:"cache_write_5m_tokens,omitempty"`
	CacheWrite1hTokens Money `json:"cache_write_1h_tokens,omitempty"`
	// CacheReadTokens is the price of one million input tokens read from a prompt cache, which
	// Anthropic reports apart (cache_read_input_tokens) and bills at a tenth of its input
	// price. Default: 0.1 × InputTokens (rounded up to the micro-unit). Other protocols' usage
	// does not tell cache reads apart: their cached input is charged at InputTokens.
	CacheReadTokens Money `json:"cache_read_tokens,omitempty"`

	// Request is the price of each request or task, added to any other unit.
	Request Money `json:"request,omitempty"`

	// MaxSeconds is the length a video task of duration -1 (the model chooses) is estimated
	// at. Default: 15.
	MaxSeconds int64 `json:"max_seconds,omitempty"`
	// MaxOutput is the output tokens a text request that names no maximum is estimated at.
	// Default: 4096.
	MaxOutput int64 `json:"max_output,omitempty"`
}

// ImagePrice is the price of one image of a size and, when Quality is set, of that quality.
type ImagePrice struct {
	// Size is the image size, "WIDTHxHEIGHT" as requests spell it, such as "1536x1024".
	Size string `json:"size"`
	// Quality is "low", "medium" or "high"; empty for any quality.
	Quality string `json:"quality,omitempty"`
	// Amount is the price of one image.
	Amount Money `json:"amount"`
}

// Defaults of the estimates.
const (
	// DefaultMaxSeconds is the estimate of a duration -1 when the price sets no max_seconds.
	DefaultMaxSeconds = 15
	// DefaultMaxOutput is the output-token estimate of a text request that names no maximum
	// when the price sets no max_output.
	DefaultMaxOutput = 4096
)

// Resolutions are the video resolution bands a price may name, as the task contract spells them.
var Resolutions = []string{"480p", "720p", "1080p", "4k"}

// ImageQualities are the image qualities a price may name.
var ImageQualities = []string{"low", "medium", "high"}

var imageSize = regexp.MustCompile(`^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$`)

// Validate reports the first thing wrong with p, in words an operator can act on.
func (p *Price) Validate() error {
	if p.Model == "" {
		return errors.New("price: a model id is required")
	}
	where := fmt.Sprintf("price %q", p.Model)
	amounts := map[string]Money{"video_tokens": p.VideoTokens, "second": p.Second, "image": p.Image,
		"input_tokens": p.InputTokens, "output_tokens": p.OutputTokens, "request": p.Request,
		"cache_write_5m_tokens": p.CacheWrite5mTokens, "cache_write_1h_tokens": p.CacheWrite1hTokens,
		"cache_read_tokens": p.CacheReadTokens}
	for name, m := range amounts {
		if m < 0 {
			return fmt.Errorf("%s: %s must not be negative", where, name)
		}
	}
	video := p.Second > 0 || len(p.SecondBands) > 0
	if p.VideoTokens > 0 && video {
		return fmt.Errorf("%s: a model is priced by video_tokens or by second, not both", where)
	}
	for band, m := range p.SecondBands {
		if !slices.Contains(Resolutions, band) {
			return fmt.Errorf("%s: second %s: the resolution must be one of 480p, 720p, 1080p, 4k", where, band)
		}
		if m < 0 {
			return fmt.Errorf("%s: second %s must not be negative", where, band)
		}
	}
	if (p.Audio != 0 || p.Draft != 0) && p.VideoTokens == 0 && !video {
		return fmt.Errorf("%s: audio and draft multiply a video price: add video_tokens or second", where)
	}
	if p.Audio < 0 || p.Draft < 0 {
		return fmt.Errorf("%s: multipliers must not be negative", where)
	}
	seen := map[[2]string]bool{}
	for _, ip := range p.ImageSizes {
		switch {
		case !imageSize.MatchString(ip.Size):
			return fmt.Errorf("%s: image size %q: want WIDTHxHEIGHT such as 1024x1024", where, ip.Size)
		case ip.Quality != "" && !slices.Contains(ImageQualities, ip.Quality):
			return fmt.Errorf("%s: image quality %q: want low, medium or high", where, ip.Quality)
		case ip.Amount < 0:
			return fmt.Errorf("%s: image %s must not be negative", where, ip.Size)
		case seen[[2]string{ip.Size, ip.Quality}]:
			return fmt.Errorf("%s: image %s %s is priced twice", where, ip.Size, ip.Quality)
		}
		seen[[2]string{ip.Size, ip.Quality}] = true
	}
	if p.MaxSeconds < 0 || p.MaxOutput < 0 {
		return fmt.Errorf("%s: max_seconds and max_output must not be negative", where)
	}
	if !p.priced() {
		return fmt.Errorf("%s: no unit is priced: add one of video_tokens, second, image, input_tokens, output_tokens, request", where)
	}
	return nil
}

// priced reports whether p prices any unit above zero. (A model without a price is free, and
// still metered; a price block of only zeros says nothing more, and is refused as a likely slip.)
func (p *Price) priced() bool {
	return p.VideoTokens != 0 || p.Second != 0 || len(p.SecondBands) > 0 || p.Image != 0 ||
		len(p.ImageSizes) > 0 || p.InputTokens != 0 || p.OutputTokens != 0 || p.Request != 0
}

// maxSeconds is the length a duration of -1 is estimated at.
func (p *Price) maxSeconds() int64 {
	if p.MaxSeconds > 0 {
		return p.MaxSeconds
	}
	return DefaultMaxSeconds
}

// maxOutput is the output-token estimate of a text request that names no maximum.
func (p *Price) maxOutput() int64 {
	if p.MaxOutput > 0 {
		return p.MaxOutput
	}
	return DefaultMaxOutput
}

// secondPrice is the price of one second at a resolution: its band, else Second, else (a
// resolution no band names, on a model priced only by bands) the highest band, so that an
// unexpected resolution is never free.
func (p *Price) secondPrice(resolution string) Money {
	if m, ok := p.SecondBands[resolution]; ok {
		return m
	}
	if p.Second > 0 {
		return p.Second
	}
	highest := Money(0)
	for _, m := range p.SecondBands {
		highest = max(highest, m)
	}
	return highest
}

// AutoImageSize is the size an image request names when it leaves the size to the model.
const AutoImageSize = "auto"

// imagePrice is the price of one image of a size and quality. A quality that no price can name
// (none, "auto": the model picks; or one outside low, medium, high) costs the highest price any
// quality of the size can cost, and the size "auto" the highest of any size, so that an image
// whose quality or size is not known in advance is held at an upper bound; the settlement then
// prices the quality and size the answer reports (see AnswerImage).
func (p *Price) imagePrice(size, quality string) Money {
	if size == AutoImageSize {
		bound := p.sizePrice("", quality) // a size no price names
		for _, ip := range p.ImageSizes {
			bound = max(bound, p.imagePrice(ip.Size, quality))
		}
		return bound
	}
	if !slices.Contains(ImageQualities, quality) {
		bound := p.sizePrice(size, "")
		for _, q := range ImageQualities {
			bound = max(bound, p.sizePrice(size, q))
		}
		return bound
	}
	return p.sizePrice(size, quality)
}

// sizePrice is the price of one image of a size and quality: the size's price for that
// quality, else the size's price for any quality, else Image, else the highest size price.
func (p *Price) sizePrice(size, quality string) Money {
	anyQuality, found := Money(0), false
	highest := Money(0)
	for _, ip := range p.ImageSizes {
		highest = max(highest, ip.Amount)
		if ip.Size != size {
			continue
		}
		if ip.Quality == quality && quality != "" {
			return ip.Amount
		}
		if ip.Quality == "" {
			anyQuality, found = ip.Amount, true
		}
	}
	switch {
	case found:
		return anyQuality
	case p.Image > 0:
		return p.Image
	default:
		return highest
	}
}

// AnswerImage is the size and quality an image answer reports (OpenAI's gpt-image answers carry
// both at the top level: size "1024x1536", quality "high"), kept only when a price can name
// them: a WIDTHxHEIGHT size, and low, medium or high. Anything else is "", not reported, and
// the settlement takes the request's value in its place.
func AnswerImage(size, quality string) (string, string) {
	if !imageSize.MatchString(size) {
		size = ""
	}
	if !slices.Contains(ImageQualities, quality) {
		quality = ""
	}
	return size, quality
}
