package caddymodule

import (
	"context"
	"errors"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
)

// A request that creates an object is retried elsewhere only when no connection was made; a
// timeout after it was sent may have left the object made (and billed) upstream.
func TestRetryableKeepsCreatesFromDuplicates(t *testing.T) {
	dial := reverseproxy.NewDialError(errors.New("connection refused"))
	timeout := context.DeadlineExceeded // a net.Error whose Timeout() is true
	for _, tc := range []struct {
		err     error
		creates bool
		want    bool
	}{
		{dial, false, true}, {dial, true, true},
		{timeout, false, true}, {timeout, true, false},
		{errors.New("reset"), false, false},
	} {
		if got := retryable(tc.err, tc.creates); got != tc.want {
			t.Errorf("retryable(%v, creates=%v) = %v, want %v", tc.err, tc.creates, got, tc.want)
		}
	}
}
