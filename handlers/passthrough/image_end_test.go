package passthrough

import (
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// TestImageTaskReported: a succeeded image task's answer reports the items of its data and the
// size and quality a price can name, at most the images an edit's record says it asked for; any
// other status, a repeated member, or another kind of record reports nothing.
func TestImageTaskReported(t *testing.T) {
	task := func(status string, asked int64) storage.Task {
		return storage.Task{Kind: storage.KindImage, Status: status, Usage: ImageTaskAsked(asked)}
	}
	for _, c := range []struct {
		name   string
		t      storage.Task
		answer string
		want   billing.Usage
	}{
		{"succeeded", task("succeeded", 0), `{"status":"succeeded","data":[{"url":"a"},{"url":"b"}],"size":"1024x1536","quality":"low"}`,
			billing.Usage{Images: 2, ImageSize: "1024x1536", ImageQuality: "low"}},
		{"completed, bounded by the edit's n", task("completed", 1), `{"status":"completed","data":[{"url":"a"},{"url":"b"},{"url":"c"}]}`,
			billing.Usage{Images: 1}},
		{"a size and quality no price names", task("succeeded", 0), `{"data":[{"url":"a"}],"size":"auto","quality":"ultra"}`,
			billing.Usage{Images: 1}},
		{"no data", task("succeeded", 2), `{"status":"succeeded"}`, billing.Usage{}},
		{"data not a list", task("succeeded", 2), `{"data":{"url":"a"}}`, billing.Usage{}},
		{"a repeated member", task("succeeded", 0), `{"data":[{"url":"a"}],"data":[{"url":"a"},{"url":"b"}]}`, billing.Usage{}},
		{"failed", task("failed", 0), `{"status":"failed","data":[{"url":"a"}]}`, billing.Usage{}},
		{"a video", storage.Task{Kind: KindVideo, Status: "completed"}, `{"data":[{"url":"a"}]}`, billing.Usage{}},
		{"not JSON", task("succeeded", 0), `data`, billing.Usage{}},
	} {
		if got := ImageTaskReported(c.t, []byte(c.answer)); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// An image generation's record carries its hold when its answer is a task's (no data), held
// whole; a video's always.
func TestRecordCarriesHold(t *testing.T) {
	for _, c := range []struct {
		kind, answer string
		want         bool
	}{
		{storage.KindImage, `{"id":"imgt-1","status":"queued"}`, true},
		{storage.KindImage, `{"id":"imgt-1","data":null}`, true},
		{storage.KindImage, `{"id":"img-1","data":[]}`, false}, // no image, settled (released) with its request
		{storage.KindImage, `{"id":"img-1","data":[{"url":"a"}]}`, false},
		{storage.KindImage, `{"id":"img-1","data":[],"data":[{"url":"a"}]}`, false},
		{storage.KindImage, "", false}, // a stream: not held whole
		{KindVideo, "", true},
		{KindVideoGeneration, `{"id":"vg"}`, true},
		{KindResponse, `{"id":"resp_1"}`, false},
	} {
		var answer []byte
		if c.answer != "" {
			answer = []byte(c.answer)
		}
		if got := recordCarriesHold(c.kind, answer); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.kind, c.answer, got, c.want)
		}
	}
}
