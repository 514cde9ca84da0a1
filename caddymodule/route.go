package caddymodule

import (
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/passthrough"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/internal/tracing"
)

func init() {
	caddy.RegisterModule(RouteHandler{})
}

// RouteHandler prepares pass-through requests (chat, responses, messages, generateContent,
// images, videos, audio, embeddings, rerank) for the reverse_proxy blocks that follow it. It must
// follow mediagw_auth.
//
// It finds the model in the JSON body, in the multipart field "model" (reading, and spooling to a
// temporary file past spool_memory, only as far as that field), or in a
// /v1beta/models/{model}:{action} path. A model outside the key's patterns is refused with 403,
// one that no provider serves with 404 model_not_found. It then sets the provider's credentials
// in the provider's auth style, replaces the client's version prefix (/v1, /v1beta) with the
// provider's base path, and publishes {mediagw.model}, {mediagw.provider} and
// {mediagw.upstream} (the provider's scheme://host). Match reverse_proxy blocks on the provider:
//
//	@openai vars {mediagw.provider} openai
//	reverse_proxy @openai https://api.openai.com {
//		header_up Host {upstream_hostport}
//	}
//
// The body reaches the upstream byte for byte; SSE answers are streamed by reverse_proxy. The
// model's cost is charged to the key's quota (402 past it) and refunded when the answer is an
// error status.
type RouteHandler struct {
	// MaxJSONBody bounds a JSON request body, which is read whole to find the model. Past it the
	// client gets 413. Default: 32 MiB.
	MaxJSONBody int64 `json:"max_json_body,omitempty"`
	// SpoolMemory is how much of a multipart body is held in memory while looking for the model
	// field; the rest of that prefix goes to a temporary file. Default: 1 MiB.
	SpoolMemory int64 `json:"spool_memory,omitempty"`

	router     *passthrough.Router
	accountant *accounting.Accountant
	logger     *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (RouteHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.mediagw_route",
		New: func() caddy.Module { return new(RouteHandler) },
	}
}

// Provision finds the mediagw app.
func (h *RouteHandler) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.router = &passthrough.Router{Catalog: app.Catalog(), MaxJSONBytes: h.MaxJSONBody, SpoolMemory: h.SpoolMemory}
	h.accountant, h.logger = app.Accountant(), ctx.Logger()
	return nil
}

func (h *RouteHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	id, ok := auth.FromContext(r.Context())
	if !ok {
		apierror.Write(w, apierror.OpenAIShape, auth.ErrMissingKey)
		return nil
	}
	route, err := h.router.Route(w, r, id)
	if err != nil {
		apierror.Respond(w, apierror.OpenAIShape, h.logger, err)
		return nil
	}
	defer route.Done()
	upstreamName := route.Provider.Name // the upstream label; a provider has one upstream
	entry := usage.From(r.Context())
	entry.Routed(route.Model, route.Provider.Name, upstreamName)
	charge, err := h.accountant.Charge(r.Context(), id, route.Provider.Cost(route.Model))
	if err != nil {
		apierror.Respond(w, apierror.OpenAIShape, h.logger, err)
		return nil
	}
	repl := replacer(r)
	repl.Set("mediagw.model", route.Model)
	repl.Set("mediagw.provider", route.Provider.Name)
	repl.Set("mediagw.upstream", route.Provider.BaseURL.Scheme+"://"+route.Provider.BaseURL.Host)
	sw := newAnswerWriter(w)
	err = h.proxy(sw, r, next, route.Provider.Name)
	entry.AddTokens(sw.sniffer.Tokens())
	sw.sniffer.Release()
	if latency, ok := repl.Get("http.reverse_proxy.upstream.latency"); ok {
		if d, ok := latency.(time.Duration); ok {
			entry.UpstreamLatency(d)
			metrics.UpstreamDuration(route.Provider.Name, upstreamName, entry.EndpointOr(r.URL.Path), d)
		}
	}
	if err != nil || sw.status >= 400 {
		charge.Refund() // the upstream (or the proxy) refused: the request was not served
	}
	return err
}

// proxy runs the reverse_proxy blocks after this handler, in a span of the request's trace.
func (h *RouteHandler) proxy(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, provider string) error {
	ctx, span := tracing.Start(r.Context(), "upstream "+provider, trace.SpanKindClient, attribute.String("mediagw.provider", provider))
	err := next.ServeHTTP(w, r.WithContext(ctx))
	span.End(err)
	return err
}

// UnmarshalCaddyfile sets up the handler. Syntax:
//
//	mediagw_route [<matcher>] {
//		max_json_body <size>
//		spool_memory  <size>
//	}
func (h *RouteHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	return parseBlock(d, map[string]func() error{
		"max_json_body": func() error { return sizeArg(d, &h.MaxJSONBody) },
		"spool_memory":  func() error { return sizeArg(d, &h.SpoolMemory) },
	})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*RouteHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*RouteHandler)(nil)
	_ caddyfile.Unmarshaler       = (*RouteHandler)(nil)
)
