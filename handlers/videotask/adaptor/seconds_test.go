package adaptor

import (
	"math"
	"testing"
)

// TestWholeSeconds: a reported length becomes whole seconds by the provider's rule; one that is
// not a positive number an int64 holds is 0 (not reported), never a wrapped or negative integer.
func TestWholeSeconds(t *testing.T) {
	for _, tc := range []struct {
		d            float64
		round, trunc int64
	}{
		{5, 5, 5},
		{5.5, 6, 5},
		{4.4, 4, 4},
		{0.4, 0, 0},
		{0.5, 1, 0},
		{0, 0, 0},
		{-5, 0, 0},
		{math.Copysign(0, -1), 0, 0},
		{math.NaN(), 0, 0},
		{math.Inf(1), 0, 0},
		{math.Inf(-1), 0, 0},
		{1e18, 1e18, 1e18},
		{9.2e18, 9.2e18, 9.2e18},
		{1 << 63, 0, 0},
		{9.3e18, 0, 0},
		{1e300, 0, 0},
		{math.MaxFloat64, 0, 0},
		{-1e300, 0, 0},
	} {
		if got := WholeSeconds(tc.d, math.Round); got != tc.round {
			t.Errorf("WholeSeconds(%g, Round) = %d, want %d", tc.d, got, tc.round)
		}
		if got := WholeSeconds(tc.d, math.Trunc); got != tc.trunc {
			t.Errorf("WholeSeconds(%g, Trunc) = %d, want %d", tc.d, got, tc.trunc)
		}
	}
}
