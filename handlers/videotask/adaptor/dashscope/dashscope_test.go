package dashscope

import (
	"context"
	"testing"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor/adaptortest"
)

// TestReadDurationOnlyWhenUsable: a succeeded task's usage.video_duration (or duration, the
// larger of the two) is its length in whole seconds, the fraction dropped; one that is not a
// positive number an int64 holds (negative, 1e300, past 2^63, past float64's range) is not
// reported (0), and the answer is still read: never a wrapped or negative length.
func TestReadDurationOnlyWhenUsable(t *testing.T) {
	for usage, want := range map[string]int64{
		`"video_duration":5`:                     5,
		`"video_duration":5.9`:                   5,
		`"duration":10`:                          10,
		`"video_duration":5,"duration":10`:       10,
		`"video_duration":-5`:                    0,
		`"video_duration":-5,"duration":-3`:      0,
		`"video_duration":1e300`:                 0,
		`"video_duration":1e300,"duration":5`:    5,
		`"video_duration":9223372036854775808`:   0,
		`"video_duration":1e400`:                 0,
		`"video_duration":-1e400,"duration":4`:   4,
		`"video_duration":null`:                  0,
		`"video_duration":"6"`:                   6,
		`"video_duration":1e18`:                  1e18, // within an int64: billing refuses it (see billing.Price.Possible)
		`"video_duration":0.5`:                   0,
		`"video_duration":9.3e18,"duration":1e1`: 10,
	} {
		body := `{"request_id":"r","output":{"task_id":"t1","task_status":"SUCCEEDED","video_url":"https://cdn.example.com/v.mp4"},"usage":{` + usage + `,"video_ratio":"1280*720"}}`
		s, err := Adaptor{}.Read(context.Background(), adaptortest.Answering(body), "t1", adaptor.Request{})
		if err != nil || s.Status != adaptor.StatusSucceeded {
			t.Fatalf("usage {%s}: %+v, %v", usage, s, err)
		}
		if s.Duration != want || s.Usage.VideoSeconds != want {
			t.Errorf("usage {%s}: read %d (usage %d), want %d", usage, s.Duration, s.Usage.VideoSeconds, want)
		}
	}
}
