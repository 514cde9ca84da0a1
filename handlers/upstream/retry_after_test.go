package upstream

import (
	"net/http"
	"testing"
	"time"
)

// TestRetryAfter: seconds or an HTTP date; anything else, zero, negative or past is no wait;
// a number of seconds too large for a Duration is the longest wait, never one that wrapped
// around to a short (18446744074 s would be 290 ms) or negative one.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for value, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 7 ":                           7 * time.Second,
		"0":                             0,
		"-5":                            0,
		"1.5":                           0,
		"soon":                          0,
		"1000000000":                    1_000_000_000 * time.Second,
		"18446744074":                   time.Duration(1<<63 - 1),
		"9223372037":                    time.Duration(1<<63 - 1),
		"99999999999999999999999":       0, // not an int: no wait rather than a guess
		"Sun, 01 Mar 2026 12:00:30 GMT": 30 * time.Second,
		"Sun, 01 Mar 2026 11:00:00 GMT": 0,
	} {
		h := http.Header{}
		if value != "" {
			h.Set("Retry-After", value)
		}
		if got := RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q = %v, want %v", value, got, want)
		}
	}
}
