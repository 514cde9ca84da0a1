package caddymodule

import (
	"context"
	"sync"
	"time"
)

// defaultCreateGrace is how long a create's upstream call goes on after its client left: long enough
// for a provider to answer a create it is making (a video or image task, an image, a background
// response). The request's hold is renewed as long as the call goes on (it is taken with the
// kept context), so it is still open when the call ends.
const defaultCreateGrace = 5 * time.Minute

// createGrace is the handler's CreateGrace, or the default.
func (h *RouteHandler) createGrace() time.Duration {
	if h.CreateGrace > 0 {
		return time.Duration(h.CreateGrace)
	}
	return defaultCreateGrace
}

// keptCreate is the context a create (a request that makes an upstream object) is proxied with:
// the client leaving does not cancel it, so the provider's answer, with the id of the object it
// made and bills, is still read and the object recorded as the client's account's. A client
// that gave up and retries with its Idempotency-Key then finds its first attempt's object, which
// the provider answers the retry with, and pays for it once (see passthrough.CreatedWriter's
// Replayed). Before, the attempt was cut: the first object went unrecorded and was charged its
// estimate, and the retry charged again.
//
// The call is cut create_grace (default 5 minutes) after the client left, and when the answer turns out to be
// an event stream (followClient), drain after the client left: at once without one (an image
// stream would reach no one), streamDrainTime for a stream of text, read on for its usage (see
// streamDrain). Both forms of pass-through get it, with `transport mediagw` or without.
type keptCreate struct {
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool // stops the watch of the client's context

	// grace is how long the call goes on after its client left while its answer is not known
	// to be a stream.
	grace time.Duration

	mu sync.Mutex
	// drain is how long a stream's call goes on after its client left (see streamDrain), 0
	// for none.
	drain  time.Duration
	follow bool // the answer is a stream: the call goes on drain after the client left
	left   bool // the client has left
	ended  bool // end ran: no grace to start
	cut    *time.Timer
}

// keepCreating returns the context to proxy a create with, whose client's context is client.
// Call end once the proxy is done.
func keepCreating(client context.Context, grace time.Duration) *keptCreate {
	return keepCalling(client, grace, 0)
}

// keepStreaming returns the context to proxy a request whose answer is a stream with (see
// streamDrain): cut as soon as its client leaves while the answer is not a stream yet, drain
// after its client left once it is one.
func keepStreaming(client context.Context) *keptCreate {
	return keepCalling(client, 0, streamDrainTime)
}

// keepCalling returns the context to proxy a call with: cut grace after its client left, or
// drain after when its answer is a stream.
func keepCalling(client context.Context, grace, drain time.Duration) *keptCreate {
	k := &keptCreate{grace: grace, drain: drain}
	k.ctx, k.cancel = context.WithCancel(context.WithoutCancel(client))
	k.stop = context.AfterFunc(client, k.clientLeft)
	return k
}

// drainStreams makes a stream answer's call go on for d after its client left (see
// streamDrain), instead of being cut at once.
func (k *keptCreate) drainStreams(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.drain = d
}

// clientLeft starts the grace of a call whose client left (or, for a stream, its drain); at
// once, or when the client's context ends, whichever comes first. Calls after the first do
// nothing.
func (k *keptCreate) clientLeft() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.left {
		return
	}
	k.left = true
	switch {
	case k.ended:
		k.cancel()
	case k.follow:
		k.cutAfter(k.drain)
	default:
		k.cutAfter(k.grace)
	}
}

// cutAfter cancels the call d from now (at once when d is not positive), instead of when an
// earlier cut would have. Call it with k.mu held.
func (k *keptCreate) cutAfter(d time.Duration) {
	if k.cut != nil {
		k.cut.Stop()
	}
	if d <= 0 {
		k.cancel()
		return
	}
	k.cut = time.AfterFunc(d, k.cancel)
}

// followClient marks the answer a stream: the call is cancelled when its client has left or
// leaves from now on, after drain (at once without one).
func (k *keptCreate) followClient() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.follow {
		return
	}
	k.follow = true
	if k.left {
		k.cutAfter(k.drain)
	}
}

// end releases the context and its watch.
func (k *keptCreate) end() {
	k.stop()
	k.mu.Lock()
	k.ended = true
	if k.cut != nil {
		k.cut.Stop()
	}
	k.mu.Unlock()
	k.cancel()
}
