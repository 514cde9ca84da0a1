// Package billing prices what generation costs, in money: the price table per model, the
// upper-bound estimate held when a request or task is accepted, and the amount settled from
// what the provider reports when it finishes.
//
// Amounts are integers of micro-units of the gateway's one currency (see Money); nothing on the
// money path uses floating point.
package billing

// Usage is what one finished request or task actually consumed, as the provider reported it.
// The task watcher fills it from an adaptor's answer, the pass-through path from the response's
// usage object; billing prices it with the model's Price. A zero field means "not reported":
// the estimate's value is used in its place.
type Usage struct {
	// VideoSeconds is the length of the output video in whole seconds (Ark `duration`).
	VideoSeconds int64
	// VideoFrames and FPS describe the output when the provider reports frames instead.
	VideoFrames, FPS int64
	// Resolution is the output's resolution band: "480p", "720p", "1080p" or "4k".
	Resolution string
	// Ratio is the output's aspect ratio ("16:9", ...), as the contract spells it.
	Ratio string
	// Width and Height are the output's pixel size, when the provider reports it.
	Width, Height int64
	// VideoTokens are the tokens a token-priced video model billed (Ark usage.completion_tokens).
	VideoTokens int64
	// ReferenceVideoSeconds is the length of the reference videos that a token-priced model
	// bills with its output (Ark counts input video seconds like output seconds).
	ReferenceVideoSeconds int64
	// Audio is true when the output has generated sound (generate_audio on a model that makes
	// it); Draft is true for a draft task.
	Audio, Draft bool
	// Images is the number of images returned; ImageSize ("1024x1024") and ImageQuality
	// ("high") select the image price.
	Images       int64
	ImageSize    string
	ImageQuality string
	// InputTokens and OutputTokens are a text model's token usage.
	InputTokens, OutputTokens int64
	// CacheWrite5mTokens and CacheWrite1hTokens are the input tokens, counted in InputTokens
	// too, written to a prompt cache for 5 minutes and for 1 hour (Anthropic's): they are
	// charged at the price's cache write prices instead of its input price.
	CacheWrite5mTokens, CacheWrite1hTokens int64
	// CacheReadTokens are the input tokens, counted in InputTokens too, read from a prompt
	// cache (Anthropic's): charged at the price's cache read price instead of its input price.
	CacheReadTokens int64
	// OutputReported says the answer reported its output tokens, so that an OutputTokens of 0
	// is charged as 0 (an answer cut short, refused by a content filter) rather than taken as
	// "not reported", which would charge the estimate (the request's max_tokens).
	OutputReported bool
	// Requests is the number of requests, for models priced per request (normally 1).
	Requests int64
}
