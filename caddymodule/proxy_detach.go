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
// The call is cut create_grace (default 5 minutes) after the client left, and at once when the answer turns out to be
// an event stream (followClient): a provider that stops generating when its stream is closed
// should, and the stream would reach no one. Both forms of pass-through get it, with
// `transport mediagw` or without.
type keptCreate struct {
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool // stops the watch of the client's context

	mu       sync.Mutex
	follow   bool // cancel as soon as the client has left
	left     bool // the client has left
	ended    bool // end ran: no grace to start
	graceCut *time.Timer
}

// keepCreating returns the context to proxy a create with, whose client's context is client.
// Call end once the proxy is done.
func keepCreating(client context.Context, grace time.Duration) *keptCreate {
	k := new(keptCreate)
	k.ctx, k.cancel = context.WithCancel(context.WithoutCancel(client))
	k.stop = context.AfterFunc(client, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.left = true
		if k.follow || k.ended {
			k.cancel()
			return
		}
		k.graceCut = time.AfterFunc(grace, k.cancel)
	})
	return k
}

// followClient cancels the call when its client has left or leaves from now on.
func (k *keptCreate) followClient() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.follow = true
	if k.left {
		k.cancel()
	}
}

// end releases the context and its watch.
func (k *keptCreate) end() {
	k.stop()
	k.mu.Lock()
	k.ended = true
	if k.graceCut != nil {
		k.graceCut.Stop()
	}
	k.mu.Unlock()
	k.cancel()
}
