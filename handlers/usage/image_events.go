package usage

// ImageEvents reads a streamed image answer as it streams by, without holding it: OpenAI's image
// generation and edit streams (`stream: true`), whose events are image_generation.partial_image
// and image_edit.partial_image (a partial image, sent while the image is being made) and
// image_generation.completed and image_edit.completed (a finished image, with the size and
// quality it was made at, and its usage). It counts the partial and the completed images, and
// keeps the size and quality of the last completed one. Each data line is read as one event's
// JSON object (OpenAI sends every event on one line; see dataLines), byte by byte as DataItems
// reads a JSON answer, however large its b64_json; only its top-level "type", "size" and
// "quality" are kept, and an event is counted only when its line holds one whole JSON object.
type ImageEvents struct {
	lines     dataLines
	event     DataItems // the current data line's JSON
	completed int64
	partials  int64
	size      string
	quality   string
}

// Image stream event types, as OpenAI's image streaming reference names them.
const (
	ImageGenerationCompleted = "image_generation.completed"
	ImageGenerationPartial   = "image_generation.partial_image"
	ImageEditCompleted       = "image_edit.completed"
	ImageEditPartial         = "image_edit.partial_image"
)

// Write reads p; it never fails.
func (e *ImageEvents) Write(p []byte) { e.lines.write(p, e) }

func (e *ImageEvents) beginData()    { e.event = DataItems{} }
func (e *ImageEvents) data(p []byte) { e.event.Write(p) }

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
	}
}

// Completed is the number of completed images seen (whole image_generation.completed and
// image_edit.completed events).
func (e *ImageEvents) Completed() int64 { return e.completed }

// Partials is the number of partial images seen.
func (e *ImageEvents) Partials() int64 { return e.partials }

// Reported is the size and quality the last completed image reports, "" when absent, not a plain
// string, or longer than 16 bytes: the provider's word, to be checked before use
// (billing.AnswerImage).
func (e *ImageEvents) Reported() (size, quality string) { return e.size, e.quality }
