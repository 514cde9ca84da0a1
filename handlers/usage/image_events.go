package usage

// ImageEvents reads a streamed image answer as it streams by, without holding it: OpenAI's image
// generation and edit streams (`stream: true`), whose events are image_generation.partial_image
// and image_edit.partial_image (a partial image, sent while the image is being made) and
// image_generation.completed and image_edit.completed (a finished image, with the size and
// quality it was made at, and its usage). It counts the partial and the completed images, and
// keeps the size and quality of the last completed one. Each event's data is read as one JSON
// object (OpenAI sends every event on one line; one spread over several data lines is read as a
// client joins them, see dataLines), byte by byte as DataItems reads a JSON answer, however large
// its b64_json; only its top-level "type", "size" and "quality" are kept, and an event is counted
// only when its data is one whole JSON object.
//
// Ark's Seedream streams (stream: true) are read too: each image_generation.partial_succeeded
// event is one finished image delivered (its URL and size; a sequential set makes up to 15), an
// image_generation.partial_failed one that failed, and their image_generation.completed is the
// stream's end with its usage, not an image. A stream with either Ark event is counted so.
type ImageEvents struct {
	lines     dataLines
	event     DataItems // the current data line's JSON
	completed int64
	partials  int64
	size      string
	quality   string
	// ark counts the images of Ark's partial_succeeded events, arkStream is set once an Ark
	// event was seen, and arkSize is the size the last of them reports.
	ark       int64
	arkStream bool
	arkSize   string
}

// Image stream event types, as OpenAI's image streaming reference names them.
const (
	ImageGenerationCompleted = "image_generation.completed"
	ImageGenerationPartial   = "image_generation.partial_image"
	ImageEditCompleted       = "image_edit.completed"
	ImageEditPartial         = "image_edit.partial_image"
	// Ark's Seedream stream events.
	ArkImageSucceeded = "image_generation.partial_succeeded"
	ArkImageFailed    = "image_generation.partial_failed"
)

// Write reads p; it never fails.
func (e *ImageEvents) Write(p []byte) { e.lines.write(p, e) }

func (e *ImageEvents) beginData()     { e.event = DataItems{} }
func (e *ImageEvents) data(p []byte)  { e.event.Write(p) }
func (e *ImageEvents) complete() bool { return e.event.Complete() }

// endData ends a data line: one that held one whole event is counted.
func (e *ImageEvents) endData() {
	if !e.event.Complete() {
		return
	}
	switch e.event.Type() {
	case ImageGenerationCompleted, ImageEditCompleted:
		e.completed++
		e.size, e.quality = e.event.Reported()
	case ImageGenerationPartial, ImageEditPartial:
		e.partials++
	case ArkImageSucceeded:
		e.ark++
		e.arkStream = true
		e.arkSize, _ = e.event.Reported()
	case ArkImageFailed:
		e.arkStream = true
	}
}

// Completed is the number of completed images seen (whole image_generation.completed and
// image_edit.completed events; in an Ark stream, its partial_succeeded events).
func (e *ImageEvents) Completed() int64 {
	if e.arkStream {
		return e.ark
	}
	return e.completed
}

// Partials is the number of partial images seen.
func (e *ImageEvents) Partials() int64 { return e.partials }

// Reported is the size and quality the last completed image reports, "" when absent, not a plain
// string, or longer than 16 bytes: the provider's word, to be checked before use
// (billing.AnswerImage).
func (e *ImageEvents) Reported() (size, quality string) {
	if e.arkStream {
		return e.arkSize, ""
	}
	return e.size, e.quality
}
