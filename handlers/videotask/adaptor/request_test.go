package adaptor

import (
	"reflect"
	"testing"
)

// TestFromArk: the canonical form keeps the prompt (texts joined), media with roles (an image
// without a role is the first frame), the options and a negative prompt from tools, and drops
// what no adaptor maps.
func TestFromArk(t *testing.T) {
	body := `{"model":"client-id","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://i/1.png"}},
		{"type":"image_url","role":"last_frame","image_url":{"url":"https://i/2.png"}},{"type":"video_url","video_url":{"url":"https://v/1.mp4"}},
		{"type":"text","text":"b"}],"duration":5,"resolution":"720p","ratio":"16:9","seed":-1,"watermark":true,"service_tier":"flex",
		"execution_expires_after":7200,"tools":[{"type":"web_search"},{"type":"negative_prompt","text":"no rain"}]}`
	got, err := FromArk([]byte(body), "upstream-id")
	if err != nil {
		t.Fatal(err)
	}
	seed, yes := int64(-1), true
	want := Request{Model: "upstream-id", Prompt: "a\nb", NegativePrompt: "no rain",
		Media: []Media{{Kind: "image", Role: RoleFirstFrame, URL: "https://i/1.png"}, {Kind: "image", Role: RoleLastFrame, URL: "https://i/2.png"},
			{Kind: "video", Role: RoleReferenceVideo, URL: "https://v/1.mp4"}},
		Duration: 5, Resolution: "720p", Ratio: "16:9", Seed: &seed, Watermark: &yes, ExecutionExpiresAfter: 7200}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if _, err := FromArk([]byte(`[`), "m"); err == nil {
		t.Fatal("a body that is not JSON decoded")
	}
}
