package usage

import (
	"cmp"
	"slices"

	"github.com/mediagw/mediagw/handlers/billing"
)

// ResponseImages reads the images that a Responses answer's image_generation tool made, as the
// answer streams by, without holding it (see responseScan):
//
//   - a JSON answer (a response object) reports them once it is read whole and its status is
//     final (not queued or in_progress, which a background response answers): its
//     image_generation_call output items whose status is completed (or that carry a result and
//     no status), each with its size and quality; none when it has no output (an answer of
//     another kind, such as an input token count);
//   - a stream reports them once its first whole event was read. Its final event
//     (response.completed, .incomplete, .failed, .cancelled) lists them as the JSON answer does
//     (or, when it lists fewer, the calls the stream's events completed).
//     A stream that ended before it (the client left, or the upstream broke it off) reports the
//     calls its events showed: each completed one (response.image_generation_call.completed, or
//     an output_item.done of a completed call), at the size and quality its item or its partial
//     images reported, and each that streamed partial images only
//     (response.image_generation_call.partial_image), with no size or quality: a partial image
//     is a picture of the image being made, delivered to the client, and is charged as held.
//
// Each event is read from its data lines, as a client joins them (see dataLines). Set SSE before
// the first Write.
type ResponseImages struct {
	SSE bool

	answer  responseScan // a JSON answer
	lines   dataLines
	event   responseScan // the current data line's
	started bool         // a whole event was read
	final   *responseScan
	calls   map[string]*streamedCall
}

// streamedCall is what a stream's events showed of one image_generation call.
type streamedCall struct {
	completed, partial bool
	size, quality      string
}

// Stream event types that ResponseImages reads, as OpenAI's Responses streaming reference names
// them.
const (
	eventItemAdded     = "response.output_item.added"
	eventItemDone      = "response.output_item.done"
	eventImagePartial  = "response.image_generation_call.partial_image"
	eventImageComplete = "response.image_generation_call.completed"
)

// finalEvents are the events that end a response and carry it whole.
var finalEvents = []string{"response.completed", "response.incomplete", "response.failed", "response.cancelled"}

// Write reads p; it never fails.
func (r *ResponseImages) Write(p []byte) {
	if !r.SSE {
		r.answer.Write(p)
		return
	}
	r.lines.write(p, r)
}

func (r *ResponseImages) beginData()     { r.event = responseScan{event: true} }
func (r *ResponseImages) data(p []byte)  { r.event.Write(p) }
func (r *ResponseImages) complete() bool { return r.event.complete() }

// endData ends a data line: one that held one whole event is read.
func (r *ResponseImages) endData() {
	if r.event.complete() {
		r.started = true
		r.readEvent(&r.event)
	}
}

// readEvent takes what one whole event shows of the tool's calls.
func (r *ResponseImages) readEvent(e *responseScan) {
	if slices.Contains(finalEvents, e.own.typ) {
		kept := *e
		r.final = &kept
		return
	}
	switch e.own.typ {
	case eventItemAdded, eventItemDone:
		if !e.hasEventItem || e.eventItem.typ != imageGenerationCall {
			return
		}
		if c := r.call(e.eventItem.id); c != nil && e.eventItem.made() {
			c.completed = true
			c.size, c.quality = cmp.Or(e.eventItem.size, c.size), cmp.Or(e.eventItem.quality, c.quality)
		}
	case eventImagePartial, eventImageComplete:
		c := r.call(e.own.id)
		if c == nil {
			return
		}
		c.size, c.quality = cmp.Or(e.own.size, c.size), cmp.Or(e.own.quality, c.quality)
		if e.own.typ == eventImagePartial {
			c.partial = true
		} else {
			c.completed = true
		}
	}
}

// call is the call of an item id, made on its first event; nil past maxToolCalls calls.
func (r *ResponseImages) call(id string) *streamedCall {
	if c, ok := r.calls[id]; ok {
		return c
	}
	if len(r.calls) >= maxToolCalls {
		return nil
	}
	if r.calls == nil {
		r.calls = map[string]*streamedCall{}
	}
	c := &streamedCall{}
	r.calls[id] = c
	return c
}

// Made is what the answer read so far reports of the images made (see ResponseImages).
func (r *ResponseImages) Made() billing.MadeImages {
	if !r.SSE {
		a := &r.answer
		if !a.complete() || a.status == "queued" || a.status == "in_progress" {
			return billing.MadeImages{}
		}
		return madeOf(a.output)
	}
	if r.final != nil {
		// The final event lists the images made; one that lists fewer than the stream's
		// events completed (a provider whose final event leaves them out) does not unmake
		// them. (A call that streamed partial images only and then failed made none.)
		made, completed := madeOf(r.final.output), r.seen(false)
		if len(completed.Images) > len(made.Images) {
			return completed
		}
		return made
	}
	if !r.started {
		return billing.MadeImages{}
	}
	return r.seen(true)
}

// seen is what the stream's events showed of the tool's calls: each completed one, at the size
// and quality its events reported, and, with partials, each that streamed partial images only.
func (r *ResponseImages) seen(partials bool) billing.MadeImages {
	made := billing.MadeImages{Reported: true}
	for _, c := range r.calls {
		switch {
		case c.completed:
			made.Images = append(made.Images, billing.MadeImage{Size: c.size, Quality: c.quality})
		case c.partial && partials:
			made.Images = append(made.Images, billing.MadeImage{})
		}
	}
	return made
}

// madeOf is the images of a response's output items.
func madeOf(output []toolCall) billing.MadeImages {
	made := billing.MadeImages{Reported: true}
	for _, c := range output {
		if c.made() {
			made.Images = append(made.Images, billing.MadeImage{Size: c.size, Quality: c.quality})
		}
	}
	return made
}
