package caddymodule

import (
	"errors"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/internal/reqstate"
	"github.com/mediagw/mediagw/internal/tracing"
)

// observer follows every request through mediagw_auth and the handlers after it, and when the
// answer is complete counts it (mediagw_requests_total, mediagw_rejections_total), writes its
// usage record, and adds the account, model and provider to Caddy's access log entry.
type observer struct {
	usage *usage.Recorder
	now   func() time.Time
}

// begin starts following r, served by srv (nil outside a Caddy server): the returned writer
// notes the status and mediagw's error code. Handlers find its entry in the request context once
// mediagw_auth put it there.
//
// What end needs from r's context (the access log's extra fields, the trace id) is looked up
// here, once, while the context is fresh in the CPU's caches: at the end of a request each lookup
// walks the whole context chain again, which costs more than the rest of end. So is whether the
// request's span records (see tracedRequest).
func (o *observer) begin(w http.ResponseWriter, r *http.Request, srv *caddyhttp.Server) *observedWriter {
	ow := &observedWriter{ResponseWriterWrapper: caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}
	ow.entry.Endpoint = metrics.Endpoint(r.URL.Path)
	ow.extra = accessLogFields(r, srv)
	span := trace.SpanFromContext(r.Context())
	ow.traceID = usage.SpanTraceID(span.SpanContext())
	ow.recording = span.IsRecording()
	return ow
}

// end closes the request's entry once the handlers returned err (nil when they answered).
func (o *observer) end(ow *observedWriter, err error) {
	e := &ow.entry
	status := int(ow.status)
	if status == 0 {
		status = http.StatusOK
		if err != nil {
			status = http.StatusInternalServerError
			if he, ok := errors.AsType[caddyhttp.HandlerError](err); ok && he.StatusCode != 0 {
				status = he.StatusCode
			}
		}
	}
	out := e.Finish(status, o.now(), ow.traceID)
	rec := out.Record
	metrics.Request(e.Endpoint, rec.Provider, rec.Model, status)
	if out.Accepted {
		o.usage.Write(rec)
	} else if out.ErrorCode != "" { // mediagw refused it (not a handler after mediagw's)
		if reason := metrics.Reason(status, out.ErrorCode); reason != "" {
			metrics.Rejected(reason)
		}
	}
	if ow.extra != nil && rec.Model != "" {
		ow.extra.Add(zap.String("model", rec.Model))
		ow.extra.Add(zap.String("provider", rec.Provider))
	}
}

// observedWriter remembers the answer's status, and the error code when mediagw wrote the error
// (apierror.Write tells it through NoteErrorCode).
//
// It is allocated for every request, so it is kept within the 480-byte size class (see
// TestObservedWriterSizeClass): a field more takes the 512-byte class, and past 512 bytes an
// object carries an 8-byte header besides, and takes the 576 or 640-byte class.
type observedWriter struct {
	caddyhttp.ResponseWriterWrapper
	entry usage.Entry // the request's, which the request context carries by reference
	// extra are the access log entry's extra fields (nil when the server writes no access log),
	// and traceID the request's trace (see begin).
	extra   *caddyhttp.ExtraLogFields
	traceID string
	// identity is the caller's, which mediagw_auth puts in the request context: shared with the
	// key's other requests, never changed (see auth.Authenticator.AuthenticateShared).
	identity *auth.Identity
	// ctx is the context that mediagw_auth passed on (its parent nil before), with the request's
	// state (see reqstate.State), which points at entry and identity.
	ctx reqstate.Context
	// repl is the request's placeholder replacer, which mediagw_auth looked up (see
	// requestReplacer); nil before.
	repl *caddy.Replacer
	// answer is the answer writer of the request's mediagw_route (see answerWriterFor), kept here
	// to save it an allocation; answerTaken tells whether one took it.
	answer      answerWriter
	answerTaken bool
	// recording tells whether the request's span records (tracing.Recording), as begin found.
	recording bool
	status    int32 // (beside the bools: the writer fits in a smaller allocation)
}

func (w *observedWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = int32(status)
	}
	w.ResponseWriterWrapper.WriteHeader(status)
}

func (w *observedWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriterWrapper.Write(b)
}

// NoteErrorCode is told the code of an error answer that mediagw writes.
func (w *observedWriter) NoteErrorCode(code string) { w.entry.ErrorCode(code) }

// tracedRequest reports whether r's context has a recording span (tracing.Recording), without
// walking that context when w is the request's observed writer and r's context the one
// mediagw_auth passed on: no handler since added a span to it, and the span begin found still
// records (it ends with the request).
func tracedRequest(w http.ResponseWriter, r *http.Request) bool {
	if ow, ok := w.(*observedWriter); ok && ow.ctx.Context != nil && r.Context() == &ow.ctx {
		return ow.recording
	}
	return tracing.Recording(r.Context())
}

// Interface guards
var _ http.ResponseWriter = (*observedWriter)(nil)
