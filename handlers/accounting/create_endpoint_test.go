package accounting

import (
	"encoding/json"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// The task_finished record of a pass-through object names the endpoint its record keeps, and a
// record written before it kept one gets its kind's create endpoint: an image task's that keeps
// the images its create asked for is an edit's, any other image task a generation's.
func TestCreateEndpoint(t *testing.T) {
	for _, c := range []struct {
		task storage.Task
		want string
	}{
		{storage.Task{Kind: "video_job", Endpoint: "/v1/videos/{id}"}, "/v1/videos/{id}"},
		{storage.Task{Kind: "video_job"}, "/v1/videos"},
		{storage.Task{Kind: "video_generation"}, "/v1/video/generations"},
		{storage.Task{Kind: storage.KindImage}, "/v1/images/generations"},
		{storage.Task{Kind: storage.KindImage, Usage: json.RawMessage(`{"images":2}`)}, "/v1/images/edits"},
		{storage.Task{Kind: storage.KindImage, Endpoint: "/v1/images/generations", Usage: json.RawMessage(`{"images":2}`)}, "/v1/images/generations"},
		{storage.Task{Kind: "other"}, ""},
	} {
		if got := createEndpoint(c.task); got != c.want {
			t.Errorf("createEndpoint(%+v) = %q, want %q", c.task, got, c.want)
		}
	}
}
