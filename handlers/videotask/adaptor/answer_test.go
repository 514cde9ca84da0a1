package adaptor

import (
	"net/http"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/upstream"
)

// TestReadErrorRetryAfterByCallersClock: a read's 429 is Throttled, and its Retry-After given as
// a date is read by the clock IsThrottled is given (the health board's, which tests set), not
// the real one; seconds stand as they are.
func TestReadErrorRetryAfterByCallersClock(t *testing.T) {
	now := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	refusal := func(ans upstream.Answer) *apierror.Error { return Refusal(ans, "rate_limited", "slow down") }
	for value, want := range map[string]time.Duration{
		now.Add(45 * time.Second).Format(http.TimeFormat): 45 * time.Second,
		"12": 12 * time.Second,
		"":   0,
	} {
		h := http.Header{}
		if value != "" {
			h.Set("Retry-After", value)
		}
		err := ReadError(upstream.Answer{Status: http.StatusTooManyRequests, Header: h}, refusal)
		got, ok := IsThrottled(err, now)
		if !ok || got != want {
			t.Errorf("Retry-After %q: IsThrottled = %v, %v; want %v, true", value, got, ok, want)
		}
	}
	if _, ok := IsThrottled(ReadError(upstream.Answer{Status: http.StatusBadRequest}, refusal), now); ok {
		t.Error("a 400 is throttled")
	}
}
