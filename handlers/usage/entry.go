// Package usage keeps what operators bill by: one structured record per accepted request and per
// finished task, written to a named logger (mediagw.usage), and per-(account, model, day)
// aggregates kept in the store's counters, which the admin API reports.
//
// While a request is served, its Entry travels in the request context; the handlers that learn
// something about it (the model and provider, the money settled, the task created,
// the tokens the upstream reported) note it there with one call. Every Entry method is safe on a
// nil Entry, so handlers served without one (unit tests) need no special case.
package usage

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/internal/reqstate"
)

// WithEntry returns a context that carries e. (mediagw_auth puts the entry in the request's
// state with the rest of it, see reqstate.)
func WithEntry(ctx context.Context, e *Entry) context.Context {
	s := reqstate.Derive(ctx)
	s.Entry = e
	return reqstate.With(ctx, s)
}

// From returns the request's Entry, or nil.
func From(ctx context.Context) *Entry {
	s := reqstate.From(ctx)
	if s == nil {
		return nil
	}
	e, _ := s.Entry.(*Entry)
	return e
}

// Entry is what is known of one request for its usage record and metrics.
type Entry struct {
	// Endpoint is the endpoint label (see metrics.Endpoint), fixed when the request arrives.
	Endpoint string

	mu              sync.Mutex
	account, keyID  string
	model, provider string
	upstream        string
	taskID          string
	taskCreated     bool
	charged         bool
	amount          int64 // money settled, micro-units
	upstreamLatency time.Duration
	tokens          Tokens
	errorCode       string
}

// NewEntry starts the entry of a request to endpoint.
func NewEntry(endpoint string) *Entry { return &Entry{Endpoint: endpoint} }

// Authenticated notes the key that made the request.
func (e *Entry) Authenticated(account, keyID string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.account, e.keyID = account, keyID
	e.mu.Unlock()
}

// Routed notes the model (as the client named it, once the gateway accepted it), the provider
// that serves it and the upstream chosen.
func (e *Entry) Routed(model, provider, upstream string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.model, e.provider, e.upstream = model, provider, upstream
	e.mu.Unlock()
}

// Accepted notes that the gateway accepted the request (its hold, if any, was taken): it gets a
// usage record whatever the upstream answers.
func (e *Entry) Accepted() {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.charged = true
	e.mu.Unlock()
}

// Settled notes the money a request was charged when its hold was settled, in micro-units.
// Call it before the request's record is written (Finish); a settlement after it is lost to the
// record (the ledger still has it).
func (e *Entry) Settled(amount int64) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.amount += amount
	e.mu.Unlock()
}

// Refused notes that mediagw refused the request itself after charging it (and undid the
// charge), before any upstream saw it: the request is not accepted, so it gets no usage record
// and counts in mediagw_rejections_total like a refusal before the charge.
func (e *Entry) Refused() {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.charged = false
	e.mu.Unlock()
}

// TaskCreated notes the id of the task this request created.
func (e *Entry) TaskCreated(id string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.taskID, e.taskCreated = id, true
	e.mu.Unlock()
}

// Task notes the id of the task this request is about.
func (e *Entry) Task(id string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.taskID = id
	e.mu.Unlock()
}

// UpstreamLatency notes how long the upstream took to answer (until its response headers).
func (e *Entry) UpstreamLatency(d time.Duration) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.upstreamLatency += d
	e.mu.Unlock()
}

// Upstream is the upstream latency and token usage noted so far, for the entries of the
// requests that shared the one upstream call this entry noted (see AddUpstream).
func (e *Entry) Upstream() (latency time.Duration, tokens Tokens) {
	if e == nil {
		return 0, Tokens{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.upstreamLatency, e.tokens
}

// AddUpstream notes what another entry noted of an upstream call (see Upstream).
func (e *Entry) AddUpstream(latency time.Duration, tokens Tokens) {
	e.UpstreamLatency(latency)
	e.AddTokens(tokens)
}

// AddTokens notes token usage reported by the upstream.
func (e *Entry) AddTokens(t Tokens) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.tokens = e.tokens.merge(t)
	e.mu.Unlock()
}

// ErrorCode notes the error code mediagw answered with.
func (e *Entry) ErrorCode(code string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.errorCode = code
	e.mu.Unlock()
}

// Labels returns the provider and model for metric labels.
func (e *Entry) Labels() (provider, model string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.provider, e.model
}

// Outcome is how the request ended, for the caller that writes its record and metrics.
type Outcome struct {
	// Authenticated: a key was accepted. Accepted: the gateway charged it or answered below 400;
	// only accepted requests get a usage record.
	Authenticated, Accepted bool
	// ErrorCode is the code of mediagw's own error answer, if it wrote one.
	ErrorCode string
	Record    Record
}

// Finish closes the entry for a request answered with status.
func (e *Entry) Finish(status int, at time.Time, traceID string) Outcome {
	e.mu.Lock()
	defer e.mu.Unlock()
	rec := Record{
		Event: EventRequest, Time: at, Account: e.account, KeyID: e.keyID, Endpoint: e.Endpoint,
		Model: e.model, Provider: e.provider, Upstream: e.upstream, TaskID: e.taskID, Amount: e.amount,
		Status: statusText(status), UpstreamLatency: e.upstreamLatency, Tokens: e.tokens, TraceID: traceID,
	}
	if e.taskCreated {
		rec.Event = EventTaskCreated
	}
	return Outcome{
		Authenticated: e.keyID != "",
		Accepted:      e.keyID != "" && (e.charged || (status > 0 && status < 400)),
		ErrorCode:     e.errorCode,
		Record:        rec,
	}
}

// TraceID is the id of the trace ctx belongs to (Caddy's tracing directive), or "".
func TraceID(ctx context.Context) string {
	return SpanTraceID(trace.SpanContextFromContext(ctx))
}

// SpanTraceID is TraceID of a span's context, for a caller that has the span already.
func SpanTraceID(sc trace.SpanContext) string {
	if sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// About notes the task a request is about, with its model and provider.
func (e *Entry) About(taskID, model, provider string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.taskID, e.model, e.provider, e.upstream = taskID, model, provider, provider
	e.mu.Unlock()
}

// EndpointOr returns the entry's endpoint label, or the label of path when there is no entry.
func (e *Entry) EndpointOr(path string) string {
	if e == nil {
		return metrics.Endpoint(path)
	}
	return e.Endpoint
}
