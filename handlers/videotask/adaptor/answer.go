package adaptor

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/internal/bounded"
)

// Throttled is a provider's 429 while a task was read: the task API backs off from the upstream
// for the provider's Retry-After (see IsThrottled).
type Throttled struct {
	// Header is the 429's header, whose Retry-After (seconds, or a date read by the caller's
	// clock) says how long to back off.
	Header  http.Header
	Refusal *apierror.Error
}

func (t *Throttled) Error() string { return "the provider throttled the read: " + t.Refusal.Message }

// Unwrap gives the refusal, which a client's own poll is answered with.
func (t *Throttled) Unwrap() error { return t.Refusal }

// Refusal describes a provider's error answer as the contract's error: its code and message
// (credentials in the message redacted: every credential-like token, and the exact credentials
// the call sent, which the provider may echo whatever they look like). Status follows upstream.Refusal: a 4xx of
// the provider is passed on, a 5xx or the provider refusing the gateway's own credential is
// upstream.Failed (502 invalid_response, whatever the provider's code).
func Refusal(ans upstream.Answer, code, message string) *apierror.Error {
	status := ans.Status
	if upstream.GatewaysFault(status) {
		return upstream.Failed(ans, message)
	}
	if code == "" {
		code = "upstream_error"
	}
	if message == "" {
		message = fmt.Sprintf("the upstream provider refused the request (HTTP %d)", ans.Status)
	}
	return ans.WithRetryAfter(apierror.New(status, bounded.Text(code, upstream.MaxRefusalCode), ans.Redact(message)))
}

// ReadError is the error of a read answered with a non-2xx status: ErrNotFound for 404,
// *Throttled for 429, otherwise refusal(ans).
func ReadError(ans upstream.Answer, refusal func(upstream.Answer) *apierror.Error) error {
	switch ans.Status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusTooManyRequests:
		return &Throttled{Header: ans.Header, Refusal: refusal(ans)}
	}
	return refusal(ans)
}

// IsThrottled reports a *Throttled error and its back-off: its Retry-After, a date read as of
// now (the clock the back-off is measured on), or zero.
func IsThrottled(err error, now time.Time) (time.Duration, bool) {
	var t *Throttled
	if errors.As(err, &t) {
		return upstream.RetryAfter(t.Header, now), true
	}
	return 0, false
}
