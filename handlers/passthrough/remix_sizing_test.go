package passthrough

import (
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TestVideoMadeIsWhatTheCreateAskedOrTheAnswerSaid: a video's record keeps the length and
// picture its create named, and for what it left out, what its answer reports (OpenAI's seconds
// and size); a resolution or ratio outside the contract's is not kept; a remix keeps its
// source's. A remix of a record that keeps nothing is held at the upper bound.
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
		{"a remix", billing.Request{Remix: &billing.Usage{VideoSeconds: 12, Resolution: "4k", Ratio: "1:1"}}, answer, "s=12,r=4k,ra=1:1"},
		{"a remix of what is not known", billing.Request{Remix: &billing.Usage{}}, answer, "s=4,r=720p,ra=9:16"},
	} {
		if got := videoMade(tc.sizing, tc.answer).Encode(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := remixSizing(storage.Task{HoldUsage: "s=8,r=1080p,ra=16:9"}); *got.Remix != (billing.Usage{VideoSeconds: 8, Resolution: "1080p", Ratio: "16:9"}) {
		t.Errorf("remix of an 8 s 1080p video: %+v", *got.Remix)
	}
	for _, kept := range []string{"", "s=x", "not a usage"} {
		if got := remixSizing(storage.Task{HoldUsage: kept}); got.Remix == nil || *got.Remix != (billing.Usage{}) {
			t.Errorf("remix of a record keeping %q: %+v; want nothing known", kept, got.Remix)
		}
	}
}
