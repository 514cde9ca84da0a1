package passthrough

import (
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TestVideoMadeIsWhatTheCreateAskedOrTheAnswerSaid: a video's record keeps the length and
// picture its create named, and for what it left out, what its answer reports (OpenAI's seconds
// and size); a resolution or ratio outside the contract's is not kept; a remix keeps its
// source's. A remix is held at its source's length and picture, at the longer length when its
// body names another, at a picture not known when its body names another, and at nothing known
// (the upper bound) when the record keeps nothing.
func TestVideoMadeIsWhatTheCreateAskedOrTheAnswerSaid(t *testing.T) {
	eight := int64(8)
	answer := []byte(`{"id":"video_1","object":"video","status":"queued","seconds":"4","size":"720x1280"}`)
	for _, tc := range []struct {
		name   string
		sizing billing.Request
		answer []byte
		want   string
	}{
		{"named", billing.Request{Video: &billing.VideoTask{Duration: &eight, Resolution: "1080p", Ratio: "16:9"}}, answer, "s=8,r=1080p,ra=16:9"},
		{"left to the provider", billing.Request{Video: &billing.VideoTask{}}, answer, "s=4,r=720p,ra=9:16"},
		{"length named", billing.Request{Video: &billing.VideoTask{Duration: &eight}}, answer, "s=8,r=720p,ra=9:16"},
		{"not the contract's", billing.Request{Video: &billing.VideoTask{Resolution: "8k", Ratio: "2:1"}}, answer, "s=4,r=720p,ra=9:16"},
		{"not reported", billing.Request{Video: &billing.VideoTask{}}, []byte(`{"id":"video_1"}`), ""},
		{"a stream", billing.Request{Video: &billing.VideoTask{}}, nil, ""},
		{"frames longer than its length", billing.Request{Video: &billing.VideoTask{Duration: &eight, Frames: 289, Resolution: "720p", Ratio: "16:9"}}, answer, "s=13,r=720p,ra=16:9"},
		{"two resolutions", billing.Request{Video: &billing.VideoTask{Duration: &eight, Resolution: "720p", Ratio: "16:9", Planned: billing.PlannedVideo{Resolution: "1080p"}}}, answer, "s=8,r=720p,ra=16:9"},
		{"a remix", billing.Request{Remix: &billing.Usage{VideoSeconds: 12, Resolution: "4k", Ratio: "1:1"}}, answer, "s=12,r=4k,ra=1:1"},
		{"a remix of what is not known", billing.Request{Remix: &billing.Usage{}}, answer, "s=4,r=720p,ra=9:16"},
	} {
		if got := videoMade(tc.sizing, tc.answer).Encode(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	source := storage.Task{HoldUsage: "s=8,r=1080p,ra=16:9"}
	twelve, four := int64(12), int64(4)
	for _, tc := range []struct {
		name   string
		source storage.Task
		asked  *billing.VideoTask
		want   billing.Usage
	}{
		{"the source's", source, nil, billing.Usage{VideoSeconds: 8, Resolution: "1080p", Ratio: "16:9"}},
		{"a body naming nothing", source, &billing.VideoTask{}, billing.Usage{VideoSeconds: 8, Resolution: "1080p", Ratio: "16:9"}},
		{"a body naming the same", source, &billing.VideoTask{Duration: &eight, Resolution: "1080p", Ratio: "16:9"}, billing.Usage{VideoSeconds: 8, Resolution: "1080p", Ratio: "16:9"}},
		{"a body naming longer", source, &billing.VideoTask{Duration: &twelve}, billing.Usage{VideoSeconds: 12, Resolution: "1080p", Ratio: "16:9"}},
		{"a body naming shorter", source, &billing.VideoTask{Duration: &four}, billing.Usage{VideoSeconds: 8, Resolution: "1080p", Ratio: "16:9"}},
		{"a body naming longer frames", source, &billing.VideoTask{Duration: &four, Frames: 289}, billing.Usage{VideoSeconds: 13, Resolution: "1080p", Ratio: "16:9"}},
		{"a body naming two resolutions", source, &billing.VideoTask{Resolution: "1080p", Planned: billing.PlannedVideo{Resolution: "4k"}}, billing.Usage{VideoSeconds: 8, Ratio: "16:9"}},
		{"a body naming another picture", source, &billing.VideoTask{Resolution: "480p", Ratio: "9:16"}, billing.Usage{VideoSeconds: 8}},
		{"a body naming a length of a source not known", storage.Task{}, &billing.VideoTask{Duration: &four}, billing.Usage{}},
		{"a record keeping nothing", storage.Task{}, nil, billing.Usage{}},
		{"a record that does not read", storage.Task{HoldUsage: "s=x"}, nil, billing.Usage{}},
		{"a record of another picture", storage.Task{HoldUsage: "s=8,r=8k,ra=2:1"}, nil, billing.Usage{VideoSeconds: 8}},
	} {
		if got := remixSizing(tc.source, tc.asked); got.Remix == nil || *got.Remix != tc.want {
			t.Errorf("%s: %+v; want %+v", tc.name, got.Remix, tc.want)
		}
	}
}
