package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/internal/reqstate"
	"github.com/mediagw/mediagw/internal/tracing"
)

// mediagw_route hands reverse_proxy a request whose context finds the dispatch: an untraced
// request as it came (mediagw_auth's state holds the dispatch: no new context, no copy), a
// traced one in an "upstream <provider>" span, a child of the request's span, whose context finds
// the dispatch and the identity too.
func TestProxyCarriesTheDispatchAndTheUpstreamSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	h := &RouteHandler{}
	var seen *http.Request
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		seen = r
		return nil
	})
	request := func(ctx context.Context) (*http.Request, *providers.Dispatch) {
		id := auth.Identity{KeyID: "k1", Account: "acme"}
		ctx = reqstate.With(ctx, &reqstate.State{Identity: &id, Request: true})
		d := providers.NewDispatch(&providers.Provider{Name: "p"}, nil)
		if !providers.SetDispatch(ctx, d) {
			t.Fatal("the request's own state took no dispatch")
		}
		return httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil).WithContext(ctx), d
	}

	r, d := request(context.Background())
	if err := h.proxy(httptest.NewRecorder(), r, next, "p", tracing.Recording(r.Context())); err != nil {
		t.Fatal(err)
	}
	if seen != r {
		t.Error("an untraced request was copied on its way to reverse_proxy")
	}
	if got, _ := providers.DispatchFrom(seen.Context()); got != d {
		t.Error("reverse_proxy does not find the dispatch of an untraced request")
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans for an untraced request", n)
	}

	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	r, d = request(ctx)
	if err := h.proxy(httptest.NewRecorder(), r, next, "p", tracing.Recording(r.Context())); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if got, _ := providers.DispatchFrom(seen.Context()); got != d {
		t.Error("reverse_proxy does not find the dispatch of a traced request")
	}
	if id, ok := auth.FromContext(seen.Context()); !ok || id.KeyID != "k1" {
		t.Errorf("reverse_proxy finds identity %+v, %v in a traced request", id, ok)
	}
	span := trace.SpanFromContext(seen.Context()).SpanContext()
	var upstream sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "upstream p" {
			upstream = s
		}
	}
	switch {
	case upstream == nil:
		t.Fatalf("no upstream span among %d", len(rec.Ended()))
	case upstream.SpanContext().SpanID() != span.SpanID():
		t.Error("reverse_proxy's context is not in the upstream span")
	case upstream.Parent().SpanID() != parent.SpanContext().SpanID():
		t.Error("the upstream span is not a child of the request's")
	}
}

// tracedRequest answers what mediagw_auth's observer found of the request's span while the
// request's context is the one mediagw_auth passed on, and looks again at any other: one that a
// handler since gave a span of its own, or one served without the observed writer.
func TestTracedRequestFollowsTheContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	o := &observer{}
	passedOn := func(ctx context.Context) (*observedWriter, *http.Request) {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil).WithContext(ctx)
		ow := o.begin(httptest.NewRecorder(), r, nil)
		ow.ctx = reqstate.Context{Context: r.Context(), State: reqstate.State{Request: true}} // as mediagw_auth passes it on
		return ow, r.WithContext(&ow.ctx)
	}

	ow, r := passedOn(context.Background())
	if tracedRequest(ow, r) {
		t.Error("an untraced request counts as traced")
	}
	ctx, span := tp.Tracer("test").Start(r.Context(), "a later handler's")
	if !tracedRequest(ow, r.WithContext(ctx)) {
		t.Error("a span added after mediagw_auth is not seen")
	}
	span.End()

	ctx, span = tp.Tracer("test").Start(context.Background(), "request")
	defer span.End()
	ow, r = passedOn(ctx)
	if !tracedRequest(ow, r) {
		t.Error("a traced request counts as untraced")
	}
	if !tracedRequest(httptest.NewRecorder(), r) {
		t.Error("a traced request served without the observed writer counts as untraced")
	}
	if ow.traceID != span.SpanContext().TraceID().String() {
		t.Errorf("trace id %q, want the request's", ow.traceID)
	}
}
