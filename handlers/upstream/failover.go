package upstream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mediagw/mediagw/handlers/providers"
)

// Create sends a request that creates something upstream (a task, an image job) to the
// provider's upstreams in the provider's order, and returns the first answer that counts and the
// upstream that gave it. It moves on to the next upstream only when the failure proves that
// nothing was created: the connection was refused, or a 429 or 503 came back. Each upstream's
// health is recorded for account, whose request this is (a connection failure, a timeout, a 5xx
// or a 429 backs the account off the upstream, and cools it down for all when several accounts
// fail there; see providers.Health), honouring a 429's or 503's Retry-After. A create's 429 does
// not pause the upstream's reads: providers limit creates and reads apart, and a task's queries
// stay with its upstream. No upstream left for the account is a 503 with Retry-After. An error
// that came after the request was written to an upstream's connection is Sent.
// The body must already carry the upstream's model id.
func (c Client) Create(ctx context.Context, account string, p *providers.Provider, rel string, body []byte) (Answer, *providers.Upstream, error) {
	order, wait := p.Order(account)
	if len(order) == 0 {
		return Answer{}, nil, providers.NoUpstream(p, wait)
	}
	return c.createIn(ctx, account, order, rel, body)
}

// CreateOn is Create on one upstream only, whatever its health: the one a request is bound to
// because its body names an object made there (a draft task).
func (c Client) CreateOn(ctx context.Context, account string, u *providers.Upstream, rel string, body []byte) (Answer, *providers.Upstream, error) {
	return c.createIn(ctx, account, []*providers.Upstream{u}, rel, body)
}

// createIn tries the upstreams of order in turn (see Create).
func (c Client) createIn(ctx context.Context, account string, order []*providers.Upstream, rel string, body []byte) (Answer, *providers.Upstream, error) {
	var last Answer
	var lastErr error
	for _, u := range order {
		// The last refusal is returned only when no upstream is left to try: whatever the next
		// call ends in replaces it. Its bytes go back to the budget now, and its body is let go
		// of, so that the memory held while the next answer is read is what the budget counts
		// (with a reservation the answers share, an edit's, the budget counts the larger of the
		// two, not both).
		last.Release()
		last = Answer{}
		var written atomic.Bool
		traced := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { written.Store(true) }})
		ans, err := c.Call(traced, u, http.MethodPost, rel, body)
		switch {
		case errors.Is(err, ErrRefused):
			u.Failed(account, "connection refused", 0)
			lastErr = err
			continue
		case err != nil:
			if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrTimeout) {
				u.Failed(account, err.Error(), 0) // a connection failure; a redirect or an unreadable answer is not one
			}
			if written.Load() {
				err = sentError{err}
			}
			return Answer{}, u, err
		case ans.Status == http.StatusTooManyRequests || ans.Status == http.StatusServiceUnavailable:
			u.Failed(account, fmt.Sprintf("HTTP %d", ans.Status), RetryAfter(ans.Header, u.Now()))
			last, lastErr = ans, nil
			continue
		case ans.Status >= 500:
			u.Failed(account, fmt.Sprintf("HTTP %d", ans.Status), 0)
		default:
			u.Succeeded(account)
		}
		return ans, u, nil
	}
	return last, nil, lastErr
}

// sentError is a create's failure (a timeout, a reset, an unreadable answer) after its request's
// headers were written to the upstream's connection: the provider may have the request, and have
// made and billed what it creates.
type sentError struct{ err error }

func (e sentError) Error() string { return e.err.Error() }
func (e sentError) Unwrap() error { return e.err }

// Sent reports whether err, a Create's error, came after the request was written to an
// upstream's connection (see sentError). A create that failed before (no connection, a dial or
// TLS handshake that timed out) reached no provider: nothing was made there.
func Sent(err error) bool {
	var s sentError
	return errors.As(err, &s)
}

// RetryAfter reads a Retry-After header: seconds, or an HTTP date after now. A number of seconds
// past what a Duration holds is the longest Duration (callers bound it), not one that wrapped.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs > 0 {
		if secs > math.MaxInt64/int64(time.Second) {
			return math.MaxInt64
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Interface guards
var (
	_ Target         = (*providers.Upstream)(nil)
	_ ownCredentials = (*providers.Upstream)(nil)
	_ credentialed   = (*providers.Upstream)(nil)
	_ credentialed   = (*providers.Provider)(nil)
)
