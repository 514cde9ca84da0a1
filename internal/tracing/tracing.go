// Package tracing adds mediagw's own spans (upstream calls, store operations) to the trace of the
// request being served, as Caddy's tracing directive started it. Without a recording span in the
// context (no tracing directive, or a request not sampled) it does nothing and costs a context
// lookup.
package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName names mediagw's tracer.
const InstrumentationName = "github.com/mediagw/mediagw"

// Recording reports whether ctx carries a recording span, that is whether Start would start
// one. Callers check it first when building a span's name or attributes costs something.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// Span is a started span; End it once.
type Span struct{ span trace.Span }

// Start starts a child span of ctx's span, with the tracer provider that made that span. When
// ctx has no recording span, it returns ctx unchanged and a Span whose methods do nothing.
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{}
	}
	ctx, span := parent.TracerProvider().Tracer(InstrumentationName).Start(ctx, name,
		trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, Span{span: span}
}

// Recording reports whether the span records: callers skip building attributes otherwise.
func (s Span) Recording() bool { return s.span != nil }

// SetAttributes adds attributes to the span.
func (s Span) SetAttributes(attrs ...attribute.KeyValue) {
	if s.span != nil {
		s.span.SetAttributes(attrs...)
	}
}

// End ends the span, marked as failed when err is not nil. The error's message is recorded,
// so callers pass errors whose text carries no URL or secret.
func (s Span) End(err error) {
	if s.span == nil {
		return
	}
	if err != nil {
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}
