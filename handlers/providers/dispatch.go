package providers

import (
	"context"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mediagw/mediagw/internal/reqstate"
)

// Replayer gives a request body again from its first byte, for a retry on another upstream.
type Replayer interface {
	Replay() (io.ReadCloser, error)
}

// Dispatch is one pass-through request's way through its provider's upstreams: the order they
// are tried in, which were tried, and what each attempt needs (the path after the version
// prefix, the model ids, a replayable body). It is shared by the route handler that makes it and
// the reverse_proxy extensions (upstream source, transport) that use it.
type Dispatch struct {
	Provider *Provider
	// Account is the account whose request this is: failures back it off (see Health), and
	// upstreams where it backs off are not retried for it.
	Account string
	// Model is the client's model id; UpstreamModel the id sent upstream (they differ when the
	// provider's model_map has the model).
	Model, UpstreamModel string
	// ToolModels maps the upstream's id of each tool model the request may show in its answer
	// (a Responses image_generation tool's) to the client's: see AnswerModels.Tools.
	ToolModels map[string]string
	// Rest is the request path after the client's version prefix; each upstream's base path is
	// put before it.
	Rest string
	// Body replays the request body; nil when it cannot be replayed, and then the request is
	// never retried on another upstream.
	Body Replayer
	// Creates marks a request that makes an upstream object (a video, a response): it is retried
	// only after a failure that proves the upstream made nothing (no connection, 429, 503), never
	// after a timeout or a 502, when the object may exist and be billed.
	Creates bool

	// sent is set once an attempt counts as sent (MarkSent): the provider may have its request.
	sent atomic.Bool

	mu      sync.Mutex
	order   []*Upstream
	tried   []*Upstream
	yielded []yielded
	// Room for the tried and yielded upstreams of a request answered at its first attempt, so
	// that it does not allocate for them: the upstream source yields every untried upstream for
	// each attempt, two for a provider of two. A failover yields more and allocates, once. The
	// room is what keeps a Dispatch within the 256-byte size class, for every pass-through
	// request (see TestDispatchAllocations).
	triedBuf   [3]*Upstream
	yieldedBuf [2]yielded
}

// yielded pairs the reverse proxy's representation of an upstream with the upstream.
type yielded struct {
	key any
	u   *Upstream
}

// AnswerModels are the model ids the answer shows as the client's: the request's model when the
// provider's model_map renamed it, and ToolModels.
func (d *Dispatch) AnswerModels() AnswerModels {
	m := AnswerModels{Tools: d.ToolModels}
	if d.UpstreamModel != d.Model {
		m.Model = d.Model
	}
	return m
}

// NewDispatch starts a dispatch over upstreams in the order Provider.Order gave.
func NewDispatch(p *Provider, order []*Upstream) *Dispatch {
	d := &Dispatch{Provider: p, order: order}
	d.tried, d.yielded = d.triedBuf[:0], d.yieldedBuf[:0]
	return d
}

// First is the upstream tried first.
func (d *Dispatch) First() *Upstream { return d.order[0] }

// Untried returns the upstreams not tried yet, in order; those that began to cool down since
// the order was made come last.
func (d *Dispatch) Untried() []*Upstream { return d.AppendUntried(nil) }

// AppendUntried appends the upstreams of Untried to dst and returns the extended slice.
func (d *Dispatch) AppendUntried(dst []*Upstream) []*Upstream {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.Provider.health.now()
	start := len(dst)
	for _, u := range d.order {
		if !slices.Contains(d.tried, u) && d.Provider.health.healthy(u, d.Account, now) {
			dst = append(dst, u)
		}
	}
	if len(dst)-start+len(d.tried) == len(d.order) {
		return dst // none cools down
	}
	for _, u := range d.order {
		if !slices.Contains(d.tried, u) && !slices.Contains(dst[start:], u) {
			dst = append(dst, u)
		}
	}
	return dst
}

// Yield remembers that key (the reverse proxy's representation of an upstream, a pointer) stands
// for u.
func (d *Dispatch) Yield(key any, u *Upstream) {
	d.mu.Lock()
	d.yielded = append(d.yielded, yielded{key, u})
	d.mu.Unlock()
}

// Yielded returns the upstream that key stands for.
func (d *Dispatch) Yielded(key any) (*Upstream, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, y := range d.yielded {
		if y.key == key {
			return y.u, true
		}
	}
	return nil, false
}

// Attempt records that u is being tried. It reports whether u is the only upstream tried so far
// (the request's first attempt).
func (d *Dispatch) Attempt(u *Upstream) (first bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.tried, u) {
		d.tried = append(d.tried, u)
	}
	return len(d.tried) == 1
}

// MarkSent records that an attempt counts as sent: it was answered (and the answer is kept), or
// its request headers were written to an upstream's connection and it then failed (a timeout, a
// reset), so the provider may have the request and have done the work. An attempt refused (429,
// 502, 503) and retried on another upstream is not marked: the refusal made nothing.
func (d *Dispatch) MarkSent() { d.sent.Store(true) }

// NeverSent reports whether the request was tried (Attempt: the mediagw transport had it) and no
// attempt counts as sent (MarkSent): the client left, or every upstream failed, before any
// provider got a byte of it or after providers refused it, so nothing there was made or billed.
// It is false for a request no attempt was recorded for: another transport may have sent it.
func (d *Dispatch) NeverSent() bool {
	if d.sent.Load() {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.tried) > 0
}

// Tried returns the names of the upstreams tried so far, in order.
func (d *Dispatch) Tried() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, len(d.tried))
	for i, u := range d.tried {
		names[i] = u.Name
	}
	return names
}

// Answered is the upstream whose answer the client got: the one tried last, or the first when
// the request went out without the mediagw transport (which is then where it went).
func (d *Dispatch) Answered() *Upstream {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.tried) == 0 {
		return d.order[0]
	}
	return d.tried[len(d.tried)-1]
}

// CanRetry reports whether a failed attempt may be repeated on another upstream: the body can be
// replayed and a healthy upstream is left untried.
func (d *Dispatch) CanRetry() bool {
	if d.Body == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.Provider.health.now()
	for _, u := range d.order {
		if !slices.Contains(d.tried, u) && d.Provider.health.healthy(u, d.Account, now) {
			return true
		}
	}
	return false
}

// String keeps credentials out of anything that prints a dispatch.
func (d *Dispatch) String() string { return "dispatch to provider " + d.Provider.Name }

// WithDispatch returns ctx carrying d.
func WithDispatch(ctx context.Context, d *Dispatch) context.Context {
	s := reqstate.Derive(ctx)
	s.Dispatch = d
	return reqstate.With(ctx, s)
}

// SetDispatch sets d in the state of ctx when that is a request's own state (mediagw_auth's,
// see reqstate.State) without a dispatch yet, and reports whether it did; the handler that
// routes a request calls it before it runs the handlers that read d, and then needs no new
// context (nor copy of the request). When it reports false, use WithDispatch.
func SetDispatch(ctx context.Context, d *Dispatch) bool {
	s := reqstate.From(ctx)
	if s == nil || !s.Request || s.Dispatch != nil {
		return false
	}
	s.Dispatch = d
	return true
}

// DispatchFrom returns the dispatch of a request's context.
func DispatchFrom(ctx context.Context) (*Dispatch, bool) {
	s := reqstate.From(ctx)
	if s == nil {
		return nil, false
	}
	d, ok := s.Dispatch.(*Dispatch)
	return d, ok
}
