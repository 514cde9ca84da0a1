package videotask

import (
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// TestAdaptorsPlanTheVideoTheirProviderMakes: each adaptor that sends only some lengths or
// resolutions plans the video its provider makes (what it sends, else the provider's default,
// from each provider's published reference), which the task's hold counts.
func TestAdaptorsPlanTheVideoTheirProviderMakes(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		asked    adaptor.Request
		want     billing.PlannedVideo
	}{
		// Veo makes 8 s at 720p unless asked for a length or 1080p.
		{adaptor.Gemini, adaptor.Request{}, billing.PlannedVideo{Seconds: 8, Resolution: "720p"}},
		{adaptor.Gemini, adaptor.Request{Duration: 6, Resolution: "1080p"}, billing.PlannedVideo{Seconds: 6, Resolution: "1080p"}},
		{adaptor.Gemini, adaptor.Request{Duration: -1, Resolution: "480p"}, billing.PlannedVideo{Seconds: 8, Resolution: "720p"}},
		// Kling: the nearer of 5 or 10 s; std (720p) unless 1080p (pro).
		{adaptor.Kling, adaptor.Request{}, billing.PlannedVideo{Seconds: 5, Resolution: "720p"}},
		{adaptor.Kling, adaptor.Request{Duration: 10, Resolution: "1080p"}, billing.PlannedVideo{Seconds: 10, Resolution: "1080p"}},
		{adaptor.Kling, adaptor.Request{Duration: 3, Resolution: "480p"}, billing.PlannedVideo{Seconds: 5, Resolution: "720p"}},
		// Hailuo: 6 or 10 s, 6 only at 1080p; 768P (720p) unless 1080p.
		{adaptor.MiniMax, adaptor.Request{}, billing.PlannedVideo{Seconds: 6, Resolution: "720p"}},
		{adaptor.MiniMax, adaptor.Request{Duration: 5, Resolution: "480p"}, billing.PlannedVideo{Seconds: 6, Resolution: "720p"}},
		{adaptor.MiniMax, adaptor.Request{Duration: 10, Resolution: "1080p"}, billing.PlannedVideo{Seconds: 6, Resolution: "1080p"}},
		{adaptor.MiniMax, adaptor.Request{Duration: 10, Resolution: "720p"}, billing.PlannedVideo{Seconds: 10, Resolution: "720p"}},
		// OpenAI's videos: 4, 8 or 12 s, else 4; the size is the model's, not known.
		{adaptor.OpenAI, adaptor.Request{}, billing.PlannedVideo{Seconds: 4}},
		{adaptor.OpenAI, adaptor.Request{Duration: 12}, billing.PlannedVideo{Seconds: 12}},
		{adaptor.OpenAI, adaptor.Request{Duration: 2}, billing.PlannedVideo{Seconds: 4}},
	} {
		planner, ok := adaptors[tc.protocol].(adaptor.Planner)
		if !ok {
			t.Fatalf("the %s adaptor plans no video", tc.protocol)
		}
		got := planner.Plan(tc.asked)
		if got.Seconds != tc.want.Seconds || got.Resolution != tc.want.Resolution {
			t.Errorf("%s plans %+v for %+v, want %+v", tc.protocol, got, tc.asked, tc.want)
		}
	}
}

// TestAdaptorsPlanTheAudioTheyIgnore: an adaptor that does not send generate_audio to its
// provider (docs/video-providers.md, each protocol's "ignored" row) says so in its plan, so that
// it lowers neither the hold nor the charge of the sounding video the provider makes. DashScope
// sends it (parameters.audio). (Draft is sent by none: the task handler clears it.)
func TestAdaptorsPlanTheAudioTheyIgnore(t *testing.T) {
	flagged := adaptor.Request{GenerateAudio: new(false)}
	for protocol, ignoresAudio := range map[string]bool{adaptor.Gemini: true, adaptor.Kling: true, adaptor.MiniMax: true, adaptor.OpenAI: true, adaptor.DashScope: false} {
		planner, ok := adaptors[protocol].(adaptor.Planner)
		if !ok {
			t.Fatalf("the %s adaptor plans no video", protocol)
		}
		if p := planner.Plan(flagged); p.IgnoresAudio != ignoresAudio {
			t.Errorf("%s plans %+v; want IgnoresAudio %v", protocol, p, ignoresAudio)
		}
	}
}
