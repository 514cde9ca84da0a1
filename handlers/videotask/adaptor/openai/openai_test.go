package openai

import (
	"testing"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// TestUsageSeconds: a finished video is billed by the seconds the API reported; without them,
// by what the create asked for: the requested 4, 8 or 12, and for any other duration (which is
// not sent) the API's default, never the unsent duration.
func TestUsageSeconds(t *testing.T) {
	for _, tc := range []struct {
		reported, requested, want int64
	}{
		{reported: 8, requested: 4, want: 8},
		{requested: 12, want: 12},
		{requested: 0, want: 4},
		{requested: 10, want: 4},
		{requested: 20, want: 4},
	} {
		got := usage(adaptor.State{Duration: tc.reported}, adaptor.Request{Duration: tc.requested})
		if got.VideoSeconds != tc.want || got.Requests != 1 {
			t.Errorf("reported %d, requested %d: billed %d s (requests %d), want %d s", tc.reported, tc.requested, got.VideoSeconds, got.Requests, tc.want)
		}
	}
}
