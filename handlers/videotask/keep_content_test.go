package videotask

import (
	"encoding/json"
	"testing"
)

// The kept objects' addresses replace the provider's whatever the content's other members hold
// (numbers, objects, null stay as they were), and a case variant of a replaced name that still
// holds a provider address is dropped.
func TestWithContentURLs(t *testing.T) {
	answer := json.RawMessage(`{"id":"t1","content":{"video_url":"https://p/v.mp4","LAST_FRAME_URL":"https://p/f.png",` +
		`"size_bytes":12,"meta":{"fps":24},"file_url":null}}`)
	got, ok := withContentURLs(answer, map[string]string{"video_url": "https://kept/v.mp4", "last_frame_url": "https://kept/f.png"})
	if !ok {
		t.Fatal("not replaced")
	}
	want := `{"content":{"file_url":null,"last_frame_url":"https://kept/f.png","meta":{"fps":24},"size_bytes":12,"video_url":"https://kept/v.mp4"},"id":"t1"}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, ok := withContentURLs(json.RawMessage(`{"content":[]}`), nil); ok {
		t.Fatal("a content that is no object was replaced")
	}
	if s, _ := jsonString(answerContent(answer)["video_url"]); s != "https://p/v.mp4" {
		t.Fatalf("the content's video_url = %q", s)
	}
}
