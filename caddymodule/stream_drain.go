package caddymodule

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"time"

	"github.com/mediagw/mediagw/handlers/passthrough"
	"github.com/mediagw/mediagw/internal/hdr"
)

// The bounds of the drain of a stream whose client left (see streamDrain).
const (
	// streamDrainTime is how long the provider's stream is read on after its client left.
	streamDrainTime = 10 * time.Second
	// streamDrainBytes is how much of it is read on.
	streamDrainBytes = 8 << 20
)

// errDrainBound ends the drain of a stream that is still going past streamDrainBytes.
var errDrainBound = errors.New("the stream its client left went on past the drain's bound")

// drains reports whether route's answer is read on after its client left (see streamDrain): a
// billable stream of text, whose final event reports the usage the provider bills. Not an image
// stream (its completed events carry whole images; one left is charged as its events show), nor
// a background response's (charged its estimate when cut: the provider makes it anyway).
func drains(route *passthrough.Route) bool {
	return route.Streams && route.Billable && !route.Sizing.Images && !route.Background && len(route.Calls) == 0
}

// streamDrain stands between a streamed answer and its client. While the client is there it
// passes the answer on. Once the client has left (its request's context ended, or a write to it
// failed), it passes nothing more on, and tells reverse_proxy every write went through, so
// that the provider's stream is read on (its call's context is kept from the client's: see
// keepStreaming) for its final usage event, which the answer writer in front reads: a client
// that leaves once it has its answer, before the event that carries the usage (a reasoning
// model's tokens are billed and never streamed), is charged what the provider bills, not the
// deltas it saw. The drain ends with the stream, streamDrainTime after the client left (the
// call's context is cancelled), or past streamDrainBytes (a write fails): a stream cut so is
// settled as any cut stream, from what it streamed.
type streamDrain struct {
	http.ResponseWriter
	client  context.Context // the client's request context
	call    *keptCreate     // the call's context, cut streamDrainTime after the client left
	left    bool
	drained int64 // bytes read since the client left
}

// newStreamDrain puts a drain between w, the client's writer, and the answer; call is the
// context the request is proxied with.
func newStreamDrain(w http.ResponseWriter, client context.Context, call *keptCreate) *streamDrain {
	return &streamDrain{ResponseWriter: w, client: client, call: call}
}

func (d *streamDrain) WriteHeader(status int) {
	if status >= 200 && status < 300 && eventStream(d.Header()) {
		d.call.followClient()
	}
	d.ResponseWriter.WriteHeader(status)
}

func (d *streamDrain) Write(b []byte) (int, error) {
	if !d.left && d.client.Err() != nil {
		d.leave()
	}
	written := 0
	if !d.left {
		n, err := d.ResponseWriter.Write(b)
		if err == nil {
			return n, nil
		}
		d.leave()
		written = n
	}
	d.drained += int64(len(b) - written)
	if d.drained > streamDrainBytes {
		return written, errDrainBound
	}
	return len(b), nil
}

// leave marks the client gone: nothing more is written to it, and its call's drain starts.
func (d *streamDrain) leave() {
	d.left = true
	d.call.clientLeft()
}

// FlushError flushes what was written to a client that is still there.
func (d *streamDrain) FlushError() error {
	if d.left {
		return nil
	}
	return http.NewResponseController(d.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (d *streamDrain) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// eventStream reports whether h's Content-Type is text/event-stream.
func eventStream(h http.Header) bool {
	mt := hdr.Get(h, "Content-Type")
	if mt == "text/event-stream" {
		return true
	}
	mt, _, err := mime.ParseMediaType(mt)
	return err == nil && mt == "text/event-stream"
}

// Interface guards
var (
	_ http.ResponseWriter             = (*streamDrain)(nil)
	_ interface{ FlushError() error } = (*streamDrain)(nil)
)
