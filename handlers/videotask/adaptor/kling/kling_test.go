package kling

import (
	"context"
	"testing"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor/adaptortest"
)

// TestReadDurationOnlyWhenUsable: a succeeded task's videos[0].duration (a string, as Kling
// sends it) is rounded to whole seconds; one that is not a positive number an int64 holds
// (NaN, Inf, negative, 1e300, past 2^63) is not reported (0): never a panic, nor a wrapped or
// negative length.
func TestReadDurationOnlyWhenUsable(t *testing.T) {
	for duration, want := range map[string]int64{
		"5": 5, "5.1": 5, "9.6": 10, "0": 0, "-5": 0, "NaN": 0, "nan": 0, "Inf": 0, "+Inf": 0, "-Inf": 0,
		"1e300": 0, "1e400": 0, "9223372036854775808": 0, "9.3e18": 0, "abc": 0, "": 0,
	} {
		body := `{"code":0,"message":"SUCCEED","data":{"task_status":"succeed","task_result":{"videos":[{"url":"https://cdn.example.com/v.mp4","duration":"` + duration + `"}]}}}`
		s, err := Adaptor{}.Read(context.Background(), adaptortest.Answering(body), textToVideo+"/t1", adaptor.Request{})
		if err != nil || s.Status != adaptor.StatusSucceeded {
			t.Fatalf("duration %q: %+v, %v", duration, s, err)
		}
		if s.Duration != want || s.Usage.VideoSeconds != want {
			t.Errorf("duration %q: read %d (usage %d), want %d", duration, s.Duration, s.Usage.VideoSeconds, want)
		}
	}
}

// TestSecondsOf: a duration is asked of Kling as the nearest of the 5 or 10 s it makes (the
// longer of two equally near), which the plan (the hold, a usage without a reported length)
// counts too; -1 or none asks for nothing and plans Kling's default 5 s.
func TestSecondsOf(t *testing.T) {
	for duration, want := range map[int64]int64{-1: 5, 0: 5, 2: 5, 5: 5, 7: 5, 8: 10, 10: 10, 15: 10} {
		r := adaptor.Request{Model: "kling-v2-1-master", Duration: duration}
		if got := secondsOf(r); got != want {
			t.Errorf("duration %d: %d s, want %d", duration, got, want)
		}
		if p := (Adaptor{}).Plan(r); p.Seconds != want {
			t.Errorf("duration %d: planned %d s, want %d", duration, p.Seconds, want)
		}
	}
}
