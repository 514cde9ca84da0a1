// Package upstream calls model providers for the handlers that talk to them directly (video
// tasks, image edits) rather than through reverse_proxy. Transport failures become contract
// errors: 504 on timeout, 502 when the provider cannot be reached or answers unreadably.
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/bounded"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/internal/tracing"
)

// BackgroundEndpoint is the endpoint label of upstream calls made outside a client request (the
// task watcher, callback relays).
const BackgroundEndpoint = "background"

// observe counts an upstream call's duration and notes it, with the token usage of a successful
// answer, on the request's usage entry.
func observe(entry *usage.Entry, provider, upstream string, start time.Time, ans Answer) {
	d := time.Since(start)
	endpoint := BackgroundEndpoint
	if entry != nil {
		endpoint = entry.Endpoint
		entry.UpstreamLatency(d)
		if ans.OK() {
			if t, ok := usage.FromBody(ans.Body); ok {
				entry.AddTokens(t)
			}
		}
	}
	metrics.UpstreamDuration(provider, upstream, endpoint, d)
}

// labels splits a target's label, provider/upstream or provider, into the metric labels.
func labels(t Target) (provider, upstream string) {
	l := t.Label()
	if p, u, ok := strings.Cut(l, "/"); ok {
		return p, u
	}
	return l, l
}

// MaxBody bounds how much of an upstream answer is read, unless a Client says otherwise
// (MaxAnswer).
const MaxBody = 4 << 20

// Errors for transport failures.
var (
	ErrTimeout     = apierror.New(http.StatusGatewayTimeout, "upstream_timeout", "the upstream provider did not answer in time; retry later")
	ErrUnreachable = apierror.New(http.StatusBadGateway, "invalid_response", "the upstream provider could not be reached")
	ErrUnreadable  = apierror.New(http.StatusBadGateway, "invalid_response", "the upstream provider returned an unrecognisable response")
	// ErrTooLarge is a successful answer (2xx) longer than the client reads (MaxBody, or its
	// MaxAnswer): the provider did the work (made the images), though the gateway does not read
	// its answer.
	ErrTooLarge   = apierror.New(http.StatusBadGateway, "invalid_response", "the upstream provider's answer is longer than the gateway reads")
	ErrRedirected = apierror.New(http.StatusBadGateway, "invalid_response", "the upstream provider answered with a redirect, which the gateway does not follow")
	// ErrNotPublic is a result address (Open), first or after a redirect, off the upstream's origin
	// that is not public: it was not connected to, and would not be at any later attempt.
	ErrNotPublic = apierror.New(http.StatusBadGateway, "invalid_response", "the upstream provider named a result at an address that is not public")
	// ErrRefused is ErrUnreachable when no connection was made at all (refused, no route, no
	// such host), so the request surely did not reach the upstream.
	ErrRefused = apierror.New(http.StatusBadGateway, "invalid_response", "the upstream provider could not be reached")
)

// Target is where a call goes: an upstream of a provider, or a provider (its first upstream).
type Target interface {
	Endpoint(rel string) string
	SetCredentials(h http.Header)
	Label() string
}

// ownCredentials is a Target that sets its credentials on a header holding none of a caller's
// without clearing the names SetCredentials clears (see providers.Upstream.SetOwnCredentials).
type ownCredentials interface {
	SetOwnCredentials(h http.Header)
}

// Client calls providers with their own credentials.
type Client struct {
	HTTP   *http.Client
	Logger *zap.Logger
	// Until, when not zero, is the time past which no call of this client runs, whatever the
	// HTTP client's Timeout allows: it bounds a series of calls (a create's failover over its
	// provider's upstreams) with the deadline each call sets anyway, rather than with a timer
	// of the series' own and another per call. A call made past it ends as a timeout.
	Until time.Time
	// MaxAnswer bounds how much of an answer is read, in bytes: past it a successful answer is
	// ErrTooLarge, any other ErrUnreadable. 0 means MaxBody. The answer is held in memory
	// while it is used, so this is also the memory one call may take.
	MaxAnswer int64
	// Budget, when not nil, bounds the bytes of answers held gateway-wide (see AnswerBudget):
	// an answer read past its room is ErrBusy (ErrBusyAnswered when successful, or
	// ErrPastShareAnswered when its account's share is what it passed). The caller releases
	// each Answer it gets (Answer.Release) once it has passed it on.
	Budget *AnswerBudget
	// Account is the account whose answers the calls read, for its share of Budget.
	Account string
	// Hold, when not nil, is a reservation of Budget (AnswerBudget.Reserve) that the answers are
	// read into; the caller releases it (their Release leaves it alone).
	Hold *AnswerHold
}

// Answer is a complete upstream response.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// sent is the header the call sent, whose credentials (see credentials) Refusal redacts
	// from the provider's message whatever they look like.
	sent http.Header
	// target is where the call went; its Credentials, when it has them, are redacted too.
	target Target
	// hold is the part of the client's Budget that Body was read into: the client's Hold, or
	// one the call took (owned), which Release gives back.
	hold  *AnswerHold
	owned bool
}

// Release gives the bytes of the answer back to the budget it was read from (see
// Client.Budget), once, however many copies of the Answer call it. Call it when the answer has
// been passed on; the Body must not be used after. An answer read without a budget holds
// nothing.
func (a Answer) Release() {
	if a.owned {
		a.hold.Release()
	}
}

// BusyError is the error of a successful answer whose copy found no room (see Replace):
// ErrPastShareAnswered when its account's share is what it passed, else ErrBusyAnswered.
func (a Answer) BusyError() error { return busyAnswered(a.hold) }

// busyAnswered is the error of a successful answer that hold found no room for.
func busyAnswered(hold *AnswerHold) error {
	if hold.pastShare() {
		return ErrPastShareAnswered
	}
	return ErrBusyAnswered
}

// Replace makes body, a copy of the answer's Body just made (the body with a credential taken
// out, another model id shown, another shape), the answer's Body. The copy takes the Body's place
// in the budget the answer was read from: it takes only the bytes it adds past the Body's length,
// as a grown buffer does (the Body it replaces is no longer used, and is briefly alive with it
// until the collector comes). It reports false, and leaves the Body as it was, when the budget
// has no room for what the copy adds; an answer read without a budget always has room.
func (a *Answer) Replace(body []byte) bool {
	if more := int64(len(body) - len(a.Body)); more > 0 && !a.hold.add(more) {
		return false
	}
	a.Body = body
	return true
}

// credentialed is a Target that knows all its credentials (see providers.Upstream.Credentials):
// also those the call did not send as they are, such as a Kling upstream's secret key, which
// signs the token that was sent and which the provider knows.
type credentialed interface {
	Credentials() []string
}

// OK reports a 2xx status.
func (a Answer) OK() bool { return a.Status/100 == 2 }

// MaxRefusalMessage bounds, in bytes, a provider's message that a refusal or a 502 passes on to
// the client, and MaxRefusalCode its code and param: a longer one is cut on a UTF-8 character
// boundary and ends with "…" (bounded.Text), as a failed task's error is. A provider may write
// megabytes there, which no client reads and an idempotent create would keep.
const (
	MaxRefusalMessage = 4096
	MaxRefusalCode    = 256
)

// Redact returns a provider's message with credential-like tokens, the exact credentials the
// call sent (an API key or a signed token such as Kling's JWT, whatever it looks like) and the
// target's other credentials (Kling's secret key) replaced by Redacted (see RedactSecrets), then
// cut to MaxRefusalMessage.
func (a Answer) Redact(message string) string {
	secrets := credentials(a.sent)
	if c, ok := a.target.(credentialed); ok {
		secrets = append(secrets, c.Credentials()...)
	}
	return bounded.Text(RedactSecrets(message, secrets...), MaxRefusalMessage)
}

// jsonMediaType is the value of the Content-Type and Accept headers of a call, shared by every
// call: only the HTTP transport reads these headers, and it never changes a value in place.
var jsonMediaType = []string{"application/json"}

// Call sends one request to the provider endpoint rel (relative to its base URL). A JSON body is
// sent when body is not nil.
func (c Client) Call(ctx context.Context, p Target, method, rel string, body []byte) (ans Answer, err error) {
	return c.CallWith(ctx, p, method, rel, body, nil)
}

// CallWith is Call with extra request headers (a provider's required header, such as DashScope's
// X-DashScope-Async). The target's credentials are set after them, so they never replace one.
func (c Client) CallWith(ctx context.Context, p Target, method, rel string, body []byte, extra http.Header) (ans Answer, err error) {
	entry := usage.From(ctx)
	provider, upstreamName := labels(p)
	var span tracing.Span
	if tracing.Recording(ctx) { // no span name or attributes built for an untraced call
		ctx, span = tracing.Start(ctx, "upstream "+provider, trace.SpanKindClient,
			attribute.String("mediagw.provider", provider), attribute.String("mediagw.upstream", upstreamName),
			attribute.String("http.request.method", method))
	}
	start := time.Now()
	defer func() {
		if span.Recording() {
			span.SetAttributes(attribute.Int("http.response.status_code", ans.Status))
		}
		span.End(err)
		observe(entry, provider, upstreamName, start, ans)
	}()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel() // after the answer's body is read
	req, err := http.NewRequestWithContext(ctx, method, p.Endpoint(rel), rd)
	if err != nil {
		return Answer{}, err
	}
	if body != nil {
		req.Header["Content-Type"] = jsonMediaType
	}
	req.Header["Accept"] = jsonMediaType
	for name, values := range extra {
		req.Header[name] = values
	}
	if own, ok := p.(ownCredentials); ok && extra == nil {
		own.SetOwnCredentials(req.Header) // the header holds only what was set above
	} else {
		p.SetCredentials(req.Header)
	}
	resp, err := c.send(req)
	if err != nil {
		if isTimeout(err) || timedOut(ctx) {
			return Answer{}, ErrTimeout
		}
		c.Logger.Warn("upstream unreachable", zap.String("upstream", p.Label()), zap.Error(WithoutURL(err)))
		if notConnected(err) {
			return Answer{}, ErrRefused
		}
		return Answer{}, ErrUnreachable
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Never followed (see NewHTTPClient); its Location is not logged, it may carry tokens.
		c.Logger.Warn("upstream answered with a redirect; not followed", zap.String("upstream", p.Label()), zap.Int("status", resp.StatusCode))
		return Answer{}, ErrRedirected
	}
	hold := c.Hold
	if hold == nil && c.Budget != nil {
		hold = c.Budget.hold(c.Account)
	}
	b, err := readAnswer(resp.Body, resp.ContentLength, c.maxAnswer(), hold)
	if err != nil && hold != c.Hold {
		hold.Release()
	}
	if errors.Is(err, errAnswerBusy) {
		c.Logger.Warn("upstream answer not read: the gateway holds as many answers as answer_memory allows",
			zap.String("upstream", p.Label()), zap.Int("status", resp.StatusCode), zap.Int64("answer_memory", hold.budget.Limit()), zap.String("account", c.Account)) // busy only with a hold
		if resp.StatusCode/100 == 2 {
			return Answer{}, busyAnswered(hold)
		}
		return Answer{}, ErrBusy
	}
	if errors.Is(err, errAnswerTooLarge) {
		if resp.StatusCode/100 == 2 {
			return Answer{}, ErrTooLarge
		}
		return Answer{}, ErrUnreadable
	} else if err != nil {
		if isTimeout(err) || timedOut(ctx) {
			return Answer{}, ErrTimeout
		}
		return Answer{}, ErrUnreadable
	}
	ans = Answer{Status: resp.StatusCode, Header: resp.Header, Body: b, sent: req.Header, target: p}
	ans.hold, ans.owned = hold, hold != c.Hold
	return ans, nil
}

// MaxAnswerLimit is the largest MaxAnswer a client reads with; a larger one reads up to it.
const MaxAnswerLimit = 1 << 30

// maxAnswer is the bound on the answers the client reads (see MaxAnswer).
func (c Client) maxAnswer() int64 {
	if c.MaxAnswer > 0 {
		return min(c.MaxAnswer, MaxAnswerLimit)
	}
	return MaxBody
}

// errAnswerTooLarge is an answer body longer than the bound it was read with; errAnswerBusy one
// that its AnswerHold found no room for.
var (
	errAnswerTooLarge = errors.New("the upstream answer is longer than the gateway reads")
	errAnswerBusy     = errors.New("no room in the answer budget")
)

// readAnswer reads an answer's body, up to limit bytes (errAnswerTooLarge past it), as io.ReadAll
// does but into one buffer of the declared length (Content-Length, the usual case, up to 64 KiB;
// -1 when unknown) and the byte that tells whether the body ends there. A body that runs on past
// its declared length, or has none (a compressed answer, which the transport decodes), is read on
// into a buffer that doubles, within the same bound. The budget counts about the answer's own
// length, not a doubled buffer: hold takes a buffer of the declared length whole when it is made
// (so an answer that will not fit is refused before most of it is read), and past the declared
// length, or with none, takes room before each read for the bytes it may bring (at most
// answerReadStep past those read); errAnswerBusy when the budget has no room. The answer read
// keeps only its own length, or the reservation it was read into if that is larger (the slack
// given back). A nil hold takes nothing. A buffer never outgrows limit: whether a body of limit bytes ends there
// is read into a byte of its own, so that a budget of limit bytes holds an answer of limit bytes.
func readAnswer(body io.Reader, declared, limit int64, hold *AnswerHold) ([]byte, error) {
	size := min(int64(512), limit)
	if declared > limit {
		return nil, errAnswerTooLarge
	} else if declared >= 0 {
		// The declared length sizes the buffer up to 64 KiB; past it the buffer grows with the
		// bytes that arrive, so that an answer declared large and then stalled holds little.
		size = min(declared+1, 64<<10+1, limit)
	}
	reserved := hold.size()
	b := make([]byte, 0, size)
	for {
		if int64(len(b)) == limit {
			if err := endsAt(body); err != nil {
				return nil, err
			}
			hold.shrinkTo(max(int64(len(b)), reserved))
			return b, nil
		}
		if len(b) == cap(b) {
			// Room to read on: twice the buffer, up to the declared length's (and its end's
			// byte) while the body keeps to it, and never past limit.
			grown := min(2*int64(cap(b)), limit)
			if declared >= 0 && declared+1 > int64(cap(b)) {
				grown = min(grown, declared+1)
			}
			b = append(make([]byte, 0, grown), b...)
		}
		end := cap(b) // a buffer of the declared length is the answer's own length: taken whole
		if declared < 0 || int64(end) > declared+1 {
			end = min(end, len(b)+answerReadStep)
		}
		if !hold.growTo(int64(end)) {
			return nil, errAnswerBusy
		}
		n, err := body.Read(b[len(b):end])
		b = b[:len(b)+n]
		if err == io.EOF {
			hold.shrinkTo(max(int64(len(b)), reserved))
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// answerReadStep is the most one read of an answer may bring, and so what the answer's hold takes
// past the bytes already read.
const answerReadStep = 64 << 10

// endsAt reads on a body that has filled its bound: nil when it ends there, errAnswerTooLarge
// when another byte comes.
func endsAt(body io.Reader) error {
	var next [1]byte
	for {
		n, err := body.Read(next[:])
		switch {
		case n > 0:
			return errAnswerTooLarge
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}

// Refusal turns a non-2xx answer into a contract error. The provider's own 4xx is passed on with
// its code and message (credential-like tokens in it redacted, see RedactSecrets); a 5xx, and
// the provider refusing mediagw's credential (GatewaysFault), are Failed: 502 invalid_response.
func Refusal(a Answer) *apierror.Error {
	var e struct {
		Error *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
			Param   any    `json:"param"`
		} `json:"error"`
	}
	parsed := json.Unmarshal(a.Body, &e) == nil && e.Error != nil && e.Error.Message != ""
	status := a.Status
	if GatewaysFault(status) {
		if !parsed {
			return ErrUnreadable
		}
		return Failed(a, e.Error.Message)
	}
	if !parsed {
		return a.WithRetryAfter(apierror.New(status, "upstream_error", fmt.Sprintf("the upstream provider refused the request (HTTP %d)", a.Status)))
	}
	code, _ := e.Error.Code.(string)
	if code == "" {
		code = "upstream_error"
	}
	// Providers quote a masked form of the key they refused; that is the operator's, not the
	// client's business.
	refusal := apierror.New(status, bounded.Text(code, MaxRefusalCode), a.Redact(e.Error.Message))
	if param, ok := e.Error.Param.(string); ok {
		refusal.Param = bounded.Text(param, MaxRefusalCode)
	}
	return a.WithRetryAfter(refusal)
}

// WithRetryAfter gives a refusal passed on from a 429 answer the answer's Retry-After, so that
// the client knows how long to wait (spec §8: on a 429 the client waits). Only a number of
// seconds is taken, bounded as the gateway's own back-off from the upstream is
// (providers.MaxRetryAfter); an HTTP date is left out, as the provider's clock is not the
// client's. Any other refusal is returned as it is.
func (a Answer) WithRetryAfter(refusal *apierror.Error) *apierror.Error {
	if a.Status != http.StatusTooManyRequests {
		return refusal
	}
	secs, err := strconv.Atoi(strings.TrimSpace(a.Header.Get("Retry-After")))
	if err != nil || secs <= 0 {
		return refusal
	}
	return refusal.WithRetryAfter(min(time.Duration(min(secs, math.MaxInt32))*time.Second, providers.MaxRetryAfter))
}

// GatewaysFault reports whether a provider's error answer of status is not the client's to act
// on: a status that is no 4xx (a 5xx), or the provider refusing the operator's credential (401,
// 403, 407). Such an answer is Failed; any other 4xx is passed on as the provider's refusal.
func GatewaysFault(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
		return true
	}
	return status < 400 || status >= 500
}

// Failed is the contract's 502 for a provider's error answer that is not the client's to act
// on (GatewaysFault): a 5xx, or the provider refusing the operator's credential. Its code is
// invalid_response whatever the provider's was (spec §7.1 pairs 502 with that code alone: a
// provider's AuthenticationError passed on would read as if the client's own key were wrong);
// the message says what the provider answered, with its own message, if any, after it
// (credentials redacted).
func Failed(a Answer, message string) *apierror.Error {
	what := fmt.Sprintf("the upstream provider failed (HTTP %d)", a.Status)
	switch a.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
		what = "the upstream provider refused the gateway's own credential, which the operator has to fix"
	}
	if message != "" {
		what = bounded.Text(what+": "+a.Redact(message), MaxRefusalMessage)
	}
	return apierror.New(http.StatusBadGateway, ErrUnreadable.Code, what)
}

// credentials are the values of the credential headers of a request (see SetCredentials), a
// bearer token without its scheme.
func credentials(h http.Header) []string {
	var sent []string
	for _, name := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
		if v := h.Get(name); v != "" {
			if scheme, token, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "bearer") {
				v = strings.TrimSpace(token)
			}
			sent = append(sent, v)
		}
	}
	return sent
}

// WithoutURL returns the cause of an HTTP client error without the request URL that the client
// puts in its message, so that URLs (which may carry tokens) stay out of logs.
func WithoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// notConnected reports an error from dialling: no connection was made, nothing was sent.
func notConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// timedOut reports whether ctx ended at its deadline: the client's Timeout or the caller's.
func timedOut(ctx context.Context) bool { return errors.Is(ctx.Err(), context.DeadlineExceeded) }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
