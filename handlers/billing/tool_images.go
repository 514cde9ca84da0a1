package billing

import (
	"cmp"
	"math"
	"slices"
)

// DefaultToolImageModel is the image model OpenAI's Responses API runs for an image_generation
// tool that names none (the API reference of the tool's model: "Default: gpt-image-2"). A
// provider may name another (its tool_image_model).
const DefaultToolImageModel = "gpt-image-2"

// ToolImages is what a Responses request's image_generation tool says about the images it may
// make: the tool runs an image model of its own besides the request's model, one image per call,
// and the model may call it more than once.
type ToolImages struct {
	// Model is the tool's model, or, when it names none, its provider's default.
	Model string
	// Size and Quality are the tool's; "" and "auto" leave them to the provider, and are held at
	// the costliest size and quality the price lists.
	Size, Quality string
	// Count is how many images are held: the request's max_tool_calls, else 1. The settlement
	// charges what was made, more or fewer (up to MaxCalls).
	Count int64
	// MaxCalls is the request's max_tool_calls, 0 when it has none: the provider ignores the
	// model's further calls of a built-in tool, so an answer that reports more images than
	// that is charged that many (see SettleToolImages).
	MaxCalls int64
}

// MadeImage is one image an image_generation tool made, with the size and quality its answer
// reports ("" where it reports none: the hold's stands in).
type MadeImage struct {
	Size, Quality string
}

// MadeImages is what a Responses answer reports of the images its tools made.
type MadeImages struct {
	// Reported is set when the answer says what was made (a whole finished response, or a
	// stream that had begun); otherwise the images are charged as held.
	Reported bool
	// Images are the images made: each completed image_generation_call, and each that streamed
	// partial images only (priced as held, its Size and Quality empty).
	Images []MadeImage
}

// EstimateToolImages is the hold of the images t may make at p: t.Count images of t.Size ("" is
// "auto", the costliest size p lists) and t.Quality (see imagePrice). The image model's request
// price is not part of it: the request is the Responses request, priced at its own model.
func (p *Price) EstimateToolImages(t ToolImages) Estimate {
	size := t.Size
	if size == "" {
		size = AutoImageSize
	}
	u := Usage{Images: max(t.Count, 0), ImageSize: size, ImageQuality: t.Quality}
	return Estimate{Amount: p.Amount(u), Usage: u}
}

// SettleToolImages is what the images made cost at p, held as estimated (EstimateToolImages):
// each image at the size and quality it reports for what the tool left open, at the tool's own
// where it named them (as Merge prices an image answer), and at the hold's band where it reports
// nothing. Every image made is charged, past the held count too, but never more than most
// (the request's max_tool_calls; 0 bounds nothing): the provider makes no more, so an answer
// that reports more is charged the most costly most of them. Images not reported are charged
// as held.
func (p *Price) SettleToolImages(estimated Usage, made MadeImages, most int64) Money {
	if !made.Reported {
		return p.Amount(estimated)
	}
	one := estimated
	one.Images = 1
	amounts := make([]Money, 0, len(made.Images))
	for _, img := range made.Images {
		size, quality := AnswerImage(img.Size, img.Quality)
		amounts = append(amounts, p.Amount(Merge(one, Usage{Images: 1, ImageSize: size, ImageQuality: quality})))
	}
	if most > 0 && int64(len(amounts)) > most {
		slices.SortFunc(amounts, func(a, b Money) int { return cmp.Compare(b, a) })
		amounts = amounts[:most]
	}
	total := Money(0)
	for _, amount := range amounts {
		total += min(amount, math.MaxInt64-total) // saturating, never wrapping
	}
	return total
}
