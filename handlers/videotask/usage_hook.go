package videotask

import (
	"encoding/json"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TaskUsage is the billing hook of a finished video task: what it consumed, as its provider
// reported it, for billing to settle from. ok is false while the task is unfinished or did not
// succeed.
//
// A task made through an adaptor carries its adaptor's report (storage.Task.Usage). An Ark task's
// usage is read from its answer: duration, resolution, ratio, framespersecond, generate_audio,
// draft and usage.completion_tokens. A field the provider did not report is zero (billing then
// uses its estimate's value).
func TaskUsage(t storage.Task) (u billing.Usage, ok bool) {
	if t.Status != StatusSucceeded {
		return u, false
	}
	if len(t.Usage) > 0 {
		return u, json.Unmarshal(t.Usage, &u) == nil
	}
	var a struct {
		Duration        int64  `json:"duration"`
		Frames          int64  `json:"frames"`
		FramesPerSecond int64  `json:"framespersecond"`
		Resolution      string `json:"resolution"`
		Ratio           string `json:"ratio"`
		GenerateAudio   bool   `json:"generate_audio"`
		Draft           bool   `json:"draft"`
		Usage           struct {
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(t.Result, &a) != nil {
		return u, false
	}
	u = billing.Usage{VideoSeconds: a.Duration, VideoFrames: a.Frames, FPS: a.FramesPerSecond,
		Resolution: a.Resolution, Ratio: a.Ratio, VideoTokens: a.Usage.CompletionTokens,
		Audio: a.GenerateAudio, Draft: a.Draft, Requests: 1}
	return u, true
}
