package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"github.com/mediagw/mediagw/internal/hdr"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
)

func init() {
	caddy.RegisterModule(ProxyTransport{})
}

// ProxyTransport is a reverse_proxy transport for the upstreams of the mediagw upstream source.
// Each attempt goes to the upstream that the proxy picked, with that upstream's scheme, Host,
// base path and credential, and the request body replayed from its first byte. It keeps the
// upstreams' health: a connection failure, a 5xx or a 429 backs the request's account off that
// upstream, and cools the upstream down for all when several accounts fail there (for longer
// after each failure in a row, and at least its Retry-After, up to a bound; see
// providers.Health).
//
// An attempt that failed before any byte of an answer reached the client is handed back to the
// proxy to retry on another upstream, when one is healthy and untried: a refused connection, a
// timeout before the response headers, or a 429, 502 or 503 answer. A request that creates an
// object (a video, a response) is retried only after a refused connection, a 429 or a 503: after
// a timeout or a 502 the first upstream may have made (and billed) it. Otherwise the upstream's
// answer is passed on. The proxy retries only as often as lb_retries (or lb_try_duration)
// allows, so set it to at least the number of upstreams less one.
//
// A non-2xx JSON answer (at most 64 KiB) has credential-like tokens in its string values
// redacted, as providers quote a masked form of the operator's key when they refuse it. The
// upstream is asked only for gzip or no compression, whatever the client accepts; an error
// answer that cannot be read whole for the redaction (another encoding, past 64 KiB) is replaced
// by a 502 invalid_response.
//
// When the provider maps the model (model_map), answers are rewritten to show the client's
// model id: a JSON answer's top-level "model" and that of each JSON event of an event stream.
//
// Requests that did not pass mediagw_route go out unchanged.
type ProxyTransport struct {
	// HTTP configures the connections, as reverse_proxy's http transport does (timeouts,
	// keep-alive, buffers). Its TLS settings are not needed for https upstreams: the scheme of
	// each upstream's base_url decides.
	HTTP *reverseproxy.HTTPTransport `json:"http,omitempty"`

	logger *zap.Logger
	// gzip: the attempts ask for gzip themselves (see outgoing), as net/http would: the HTTP/1.1
	// and HTTP/2 transport is in use and its compression is not turned off.
	gzip bool
}

// CaddyModule returns the Caddy module information.
func (ProxyTransport) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.transport.mediagw",
		New: func() caddy.Module { return new(ProxyTransport) },
	}
}

// Provision sets up the HTTP transport.
func (t *ProxyTransport) Provision(ctx caddy.Context) error {
	t.logger = ctx.Logger()
	if t.HTTP == nil {
		t.HTTP = new(reverseproxy.HTTPTransport)
	}
	if err := t.HTTP.Provision(ctx); err != nil {
		return err
	}
	// HTTP/3 (versions 3) goes through another transport, left to ask for gzip by itself.
	h3 := len(t.HTTP.Versions) == 1 && t.HTTP.Versions[0] == "3"
	t.gzip = t.HTTP.Transport != nil && !t.HTTP.Transport.DisableCompression && !h3
	return nil
}

// Cleanup releases the HTTP transport.
func (t *ProxyTransport) Cleanup() error { return t.HTTP.Cleanup() }

// RoundTrip sends one attempt of a request to the upstream the proxy picked.
func (t *ProxyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	d, ok := providers.DispatchFrom(req.Context())
	if !ok {
		return t.HTTP.RoundTrip(req)
	}
	dial, _ := reverseproxy.GetDialInfo(req.Context())
	u, ok := d.Yielded(dial.Upstream)
	if !ok {
		// Never send an upstream's credential to an address that is not that upstream's; nor
		// leave the first one's on req, which reverse_proxy logs (see outgoing).
		providers.ClearCredentials(req.Header)
		return nil, fmt.Errorf("transport mediagw needs `dynamic mediagw` upstreams; %s is not one", dial.Address)
	}
	first := d.Attempt(u)
	attempt, err := t.outgoing(req, d, u)
	if err != nil {
		return nil, err
	}
	// mediagw_route's placeholders already name the first upstream for the first attempt.
	if !first || u != d.First() {
		if repl, ok := req.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
			publishUpstream(repl, u)
		}
	}
	resp, err := t.HTTP.RoundTrip(&attempt.request)
	if err != nil {
		if attempt.written.Load() {
			d.MarkSent() // written, then timed out or reset: the provider may have done the work
		}
		if errors.Is(err, context.Canceled) {
			return nil, err // the client left; not the upstream's fault
		}
		u.Failed(d.Account, failureReason(err), 0)
		if retryable(err, d.Creates) && d.CanRetry() {
			t.logger.Warn("upstream failed before answering; trying another", zap.String("upstream", u.Label()), zap.Error(err))
			return nil, retryElsewhere{err}
		}
		return nil, err
	}
	if attempt.gzip {
		decodeGzip(resp)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable:
		u.Failed(d.Account, fmt.Sprintf("HTTP %d", resp.StatusCode), upstream.RetryAfter(resp.Header, upstreamHealth.Now()))
		if d.CanRetry() && (!d.Creates || resp.StatusCode != http.StatusBadGateway) {
			if err := resp.Body.Close(); err != nil {
				t.logger.Debug("closing a refused answer", zap.Error(err))
			}
			// A refusal made nothing: this attempt does not count as sent (see Dispatch.NeverSent).
			t.logger.Warn("upstream refused; trying another", zap.String("upstream", u.Label()), zap.Int("status", resp.StatusCode))
			return nil, retryElsewhere{fmt.Errorf("upstream %s answered %d", u.Label(), resp.StatusCode)}
		}
	case resp.StatusCode >= 500:
		u.Failed(d.Account, fmt.Sprintf("HTTP %d", resp.StatusCode), 0)
	default:
		u.Succeeded(d.Account)
	}
	// Answered, and the answer goes to the client: sent, whether or not the protocol's transport
	// traces its writes.
	d.MarkSent()
	// Every credential of u: a Kling upstream's secret key and signed tokens, not only an API key.
	var buf [4]string
	secrets := u.CredentialsInto(&buf)
	redactHeaders(resp.Header, secrets)
	if resp.StatusCode >= 300 {
		if reason := redactErrorAnswer(resp, secrets, d.ErrorModels()); reason != "" {
			t.logger.Warn("upstream error answer refused", zap.String("upstream", u.Label()), zap.String("reason", reason))
		}
	}
	if models := d.AnswerModels(); models.Any() {
		showClientModels(resp, models)
	}
	typedSafely(resp.Header, &attempt.nosniff)
	return resp, nil
}

// outgoing is req pointed at u: scheme, Host, base path, credential, and a fresh copy of the body.
//
// mediagw_route put the first upstream's credential on req, for a reverse_proxy without this
// transport. reverse_proxy logs req (at debug level) after the round trip, and Caddy hides only
// Authorization there: outgoing takes the credential (and every header providers.ClearCredentials
// clears) off req first. The attempt is a copy of req with a URL and a header map of its own,
// req's cleared header copied (see headerCopy), on which u's credential is set: it never reaches
// req. The header
// values are shared with req: they are replaced here, never changed in place, as the http
// transport only reads them.
func (t *ProxyTransport) outgoing(req *http.Request, d *providers.Dispatch, u *providers.Upstream) (*outgoingRequest, error) {
	providers.ClearCredentials(req.Header)
	attempt := new(outgoingRequest)
	// The attempt is written once its headers are on the upstream's connection. RoundTrip counts
	// it as sent (Dispatch.MarkSent) when it is answered, or written and then fails (a timeout, a
	// reset: the provider may have done the work); not when it is refused (429, 502, 503) and
	// retried elsewhere, as the refusal made nothing. A client that leaves before any attempt is
	// sent (a dial or TLS handshake that stalls, or a context already done) reached no provider,
	// and its hold is released (see Dispatch.NeverSent).
	attempt.request, attempt.url = *req, *req.URL
	attempt.traceWrites()
	out := &attempt.request
	out.URL = &attempt.url
	// The transport asks for compression and undoes it, whatever the client accepts: the answer
	// is read for its usage (what the request is charged), its items and ids, and a mapped
	// model's id; a gzipped one passed through would be charged the estimate instead. It asks
	// itself, where net/http would ask for a request without Accept-Encoding, as net/http
	// allocates a header map of its own for every request it adds a header to (see asksGzip and
	// decodeGzip).
	attempt.gzip = t.asksGzip(req)
	adding := 1 // the credential
	if _, accepts := req.Header["Accept-Encoding"]; attempt.gzip && !accepts {
		adding++
	}
	out.Header = headerCopy(req.Header, adding)
	if attempt.gzip {
		out.Header["Accept-Encoding"] = acceptGzip
	} else {
		hdr.Del(out.Header, "Accept-Encoding")
	}
	out.URL.Scheme = u.BaseURL.Scheme
	out.URL.Path = upstreamPath(u.BaseURL.Path, d.Rest, req.URL.Path)
	out.URL.RawPath = ""
	out.Host = u.BaseURL.Host
	u.SetOwnCredentials(out.Header) // out.Header is req's, cleared above: nothing to clear again
	if d.Body != nil && req.Body != nil && req.Body != http.NoBody {
		body, err := d.Body.Replay()
		if err != nil {
			return nil, err
		}
		out.Body = body
	}
	return attempt, nil
}

// headerCopy is a copy of h without its Content-Length, with room for adding more names (the
// upstream's credential, Accept-Encoding). The transports never read that name from a request's
// header: HTTP/1 writes the request's ContentLength in its place, HTTP/2 and HTTP/3 their own
// content-length. Leaving it out keeps a proxied request's usual names (its own few, Caddy's
// X-Forwarded-*, Via and empty User-Agent, the credential and Accept-Encoding) within the eight
// slots of a map's first group: a ninth doubles the map's bytes. A copy of at most eight names is
// a clone of h, where assigning each name would hash it again; a larger one is a copy into a map
// sized for it, as a clone would have to grow.
func headerCopy(h http.Header, adding int) http.Header {
	_, length := h["Content-Length"]
	names := len(h) + adding
	if length {
		names--
	}
	if names <= 8 {
		c := maps.Clone(h)
		if c == nil {
			return make(http.Header, names)
		}
		delete(c, "Content-Length")
		return c
	}
	c := make(http.Header, names)
	for name, values := range h {
		c[name] = values
	}
	delete(c, "Content-Length")
	return c
}

// outgoingRequest is an attempt's copy of the request and of its URL, the trace that notes it
// sent, the storage of its answer's X-Content-Type-Options value (see typedSafely), and whether
// it asked for gzip, in one allocation.
type outgoingRequest struct {
	request http.Request
	// trace sets written when the attempt's headers are written (see RoundTrip).
	trace   httptrace.ClientTrace
	url     url.URL
	nosniff [1]string
	gzip    bool
	written atomic.Bool
}

// markWritten notes that the attempt's headers are on the upstream's connection; the transport
// may call it from its own goroutine.
func (a *outgoingRequest) markWritten() { a.written.Store(true) }

// traceWrites makes the attempt's request note when its headers are written (markWritten).
// reverse_proxy gives each attempt a client trace of its own, which only forwards 1xx answers:
// the hook is set on that trace, in place, before the attempt is sent. A request without one,
// or whose trace already has the hook (a trace from further up its context, composed into it),
// gets the attempt's own trace, composed with what it has by httptrace.WithClientTrace (which
// copies every hook by reflection, and the request).
func (a *outgoingRequest) traceWrites() {
	if t := httptrace.ContextClientTrace(a.request.Context()); t != nil && t.WroteHeaders == nil {
		t.WroteHeaders = a.markWritten
		return
	}
	a.trace.WroteHeaders = a.markWritten
	a.request = *a.request.WithContext(httptrace.WithClientTrace(a.request.Context(), &a.trace))
}

// upstreamPath is the upstream's base path (without its trailing slash) followed by rest, the
// request path after the client's version prefix. It is the client's own path, unbuilt, when that
// is the same string: an upstream whose base path is the gateway's version prefix (/v1), as most
// are.
func upstreamPath(base, rest, client string) string {
	base = strings.TrimSuffix(base, "/")
	if len(client) == len(base)+len(rest) && strings.HasPrefix(client, base) && strings.HasSuffix(client, rest) {
		return client
	}
	return base + rest
}

// retryable reports a transport failure that leaves the request safe to repeat: no connection
// could be made, or (unless the request creates an object, which the upstream may have made
// meanwhile) no response headers came in time.
func retryable(err error, creates bool) bool {
	var dialErr reverseproxy.DialError
	if errors.As(err, &dialErr) {
		return true
	}
	var ne net.Error
	return !creates && errors.As(err, &ne) && ne.Timeout()
}

// failureReason describes a transport failure for the admin API, without any URL.
func failureReason(err error) string {
	var dialErr reverseproxy.DialError
	if errors.As(err, &dialErr) {
		return "connection failed: " + err.Error()
	}
	return err.Error()
}

// retryElsewhere hands an attempt back to reverse_proxy for a retry on another upstream. The
// proxy retries POST requests only after dial errors, so the error also unwraps to one: no
// connection carried this request to an answer the client could see.
type retryElsewhere struct{ cause error }

func (e retryElsewhere) Error() string { return "retrying on another upstream: " + e.cause.Error() }

// Unwrap yields the cause and a marker DialError. The marker's own message is never read (its
// embedded error is nil); only its type matters to the proxy's retry decision.
func (e retryElsewhere) Unwrap() []error { return []error{e.cause, reverseproxy.DialError{}} }

// UnmarshalCaddyfile sets up the transport. Syntax:
//
//	transport mediagw {
//		<any subdirective of the http transport>
//	}
func (t *ProxyTransport) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	t.HTTP = new(reverseproxy.HTTPTransport)
	return t.HTTP.UnmarshalCaddyfile(d)
}

// Interface guards
var (
	_ caddy.Provisioner     = (*ProxyTransport)(nil)
	_ caddy.CleanerUpper    = (*ProxyTransport)(nil)
	_ http.RoundTripper     = (*ProxyTransport)(nil)
	_ caddyfile.Unmarshaler = (*ProxyTransport)(nil)
)
