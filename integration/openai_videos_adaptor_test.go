package integration

import (
	"bytes"
	"strings"
	"testing"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// TestOpenAIVideosCredentialedResult drives a task through an upstream that serves OpenAI's
// videos API. Mapping: duration 8 is seconds "8", 1080p × 9:16 is size 1024x1792, the first
// frame is input_reference.image_url; the negative prompt, seed, flags and last frame are
// accepted and not sent. The result's content endpoint takes the operator's key, so the client
// gets the task's owner-only content endpoint, which streams the video; neither the provider's
// id nor its address is shown; the reported seconds and size give duration, resolution and
// ratio. Another account gets the unknown-id answer. Deleting the finished task deletes the
// video upstream, then the task answers as unknown.
func TestOpenAIVideosCredentialedResult(t *testing.T) {
	v := startVideoProviders(t)
	id := v.createWith(t, map[string]any{
		"model": "sora-2-pro", "resolution": "1080p", "ratio": "9:16", "duration": 8, "seed": 5, "watermark": false,
		"content": []any{
			map[string]any{"type": "text", "text": "a tram in the rain"},
			map[string]any{"type": "image_url", "role": "first_frame", "image_url": map[string]any{"url": "https://img.example/a.png"}},
			map[string]any{"type": "image_url", "role": "last_frame", "image_url": map[string]any{"url": "https://img.example/b.png"}},
		},
		"tools": []any{map[string]any{"type": "negative_prompt", "text": "people"}},
	})
	creates := v.openai.log.matching("POST", "/v1/videos")
	want := `{"model":"sora-2-pro","prompt":"a tram in the rain","input_reference":{"image_url":"https://img.example/a.png"},"seconds":"8","size":"1024x1792"}`
	if len(creates) != 1 || string(creates[0].Body) != want || creates[0].Header.Get("Authorization") != "Bearer openai-upstream-key" {
		t.Fatalf("creates %+v\nwant %s", creates, want)
	}
	got := pollUntil(t, v.alice, id)
	wantURL := "/api/v3/contents/generations/tasks/" + id + "/content"
	if got.Status != model.StatusSucceeded || got.Content.VideoURL != wantURL {
		t.Fatalf("answer %+v", got)
	}
	raw := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	answer := raw.json(t)
	if bytes.Contains(raw.body, []byte("video_68d")) || bytes.Contains(raw.body, []byte("openai-upstream-key")) ||
		answer["duration"] != 8.0 || answer["resolution"] != "1080p" || answer["ratio"] != "9:16" {
		t.Fatalf("answer %s", raw.body)
	}
	video := call(t, "GET", v.base+got.Content.VideoURL, "mg-alice", nil)
	if video.status != 200 || !bytes.Equal(video.body, v.openai.Video) || video.header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("content: %d %q %s", video.status, video.header.Get("Content-Type"), video.body)
	}
	downloads := v.openai.log.matching("GET", "/v1/videos/video_")
	if last := downloads[len(downloads)-1]; !strings.HasSuffix(last.Path, "/content") || last.Header.Get("Authorization") != "Bearer openai-upstream-key" {
		t.Fatalf("the download: %+v", last)
	}
	other := call(t, "GET", v.base+got.Content.VideoURL, "mg-bob", nil)
	unknown := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/cgt-000000000000000000000000/content", "mg-bob", nil)
	if other.status != unknown.status || other.field("code") != unknown.field("code") || other.field("message") != unknown.field("message") || other.status == 200 {
		t.Fatalf("another account: %d %s; unknown id: %d %s", other.status, other.body, unknown.status, unknown.body)
	}

	if r := call(t, "DELETE", v.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if deletes := v.openai.log.matching("DELETE", "/v1/videos/video_"); len(deletes) != 1 {
		t.Fatalf("deletes upstream: %+v", deletes)
	}
	if r := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil); r.status != 400 || r.field("code") != "task_not_exist" {
		t.Fatalf("after the delete: %d %s", r.status, r.body)
	}
}

// TestOpenAIVideosCancelRefused: the videos API cannot stop a video being generated, so the
// cancel of an unfinished task is refused (409) and the task runs on; nothing is deleted
// upstream.
func TestOpenAIVideosCancelRefused(t *testing.T) {
	v := startVideoProviders(t)
	id := v.createWith(t, map[string]any{"model": "sora-2", "content": []any{map[string]any{"type": "text", "text": "a pond [slow]"}}})
	tasks := v.base + "/api/v3/contents/generations/tasks/"
	if r := call(t, "DELETE", tasks+id, "mg-alice", nil); r.status != 409 || r.field("code") != "cancel_not_supported" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if got := call(t, "GET", tasks+id, "mg-alice", nil).field("status"); got != "queued" && got != "running" {
		t.Fatalf("after the refused cancel: %q", got)
	}
	if deletes := v.openai.log.matching("DELETE", "/v1/videos/"); len(deletes) != 0 {
		t.Fatalf("deletes upstream: %+v", deletes)
	}
}
