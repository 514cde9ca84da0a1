package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// TestDashScopeRatioWithoutResolution: a Wan text-to-video task that names a ratio and no
// resolution is made at that ratio, at the contract's default 720p where the model offers it
// (wan2.5-t2v-preview: 720*1280 for 9:16) and otherwise at the model's nearest tier, the higher
// of two equally near (wan2.2-t2v-plus offers 480P and 1080P: 1080*1920). Before, the ratio was
// dropped and Wan made its default 1920*1080. The strict fake refuses a size of a tier the model
// does not offer; the answer reports what was made.
func TestDashScopeRatioWithoutResolution(t *testing.T) {
	v := startVideoProviders(t)
	for _, c := range []struct{ model, size, resolution string }{
		{"wan2.5-t2v-preview", "720*1280", "720p"},
		{"wan2.2-t2v-plus", "1080*1920", "1080p"},
	} {
		before := len(v.dash.log.matching("POST", "/api/v1/services/aigc/video-generation/"))
		id := v.createWith(t, map[string]any{"model": c.model, "ratio": "9:16",
			"content": []any{map[string]any{"type": "text", "text": "a heron"}}})
		creates := v.dash.log.matching("POST", "/api/v1/services/aigc/video-generation/")
		if len(creates) != before+1 {
			t.Fatalf("%s: %d creates", c.model, len(creates)-before)
		}
		var sent struct {
			Parameters map[string]any `json:"parameters"`
		}
		if err := json.Unmarshal(creates[before].Body, &sent); err != nil || sent.Parameters["size"] != c.size {
			t.Fatalf("%s: sent %s, want size %s", c.model, creates[before].Body, c.size)
		}
		if got := pollUntil(t, v.alice, id); got.Status != model.StatusSucceeded {
			t.Fatalf("%s: the task ended %s", c.model, got.Status)
		}
		answer := call(t, "GET", v.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil).json(t)
		if answer["resolution"] != c.resolution || answer["ratio"] != "9:16" {
			t.Fatalf("%s: answered %v", c.model, answer)
		}
	}
}

// TestDashScopeTierThroughTheVideosFront: a /v1/videos create of a Wan model answers, from the
// create on, the size its provider was asked for: 720x1280 asked of wan2.2-t2v-plus (480P and
// 1080P only) is made at 1080*1920, and the video object says 1080x1920, not the 720x1280 asked
// for, before and after DashScope reports it.
func TestDashScopeTierThroughTheVideosFront(t *testing.T) {
	v := startVideoProvidersWith(t, withVideosFront(t, videoProvidersCaddyfile))
	r := call(t, "POST", v.base+"/v1/videos", "mg-alice", `{"model":"wan2.2-t2v-plus","prompt":"a heron","size":"720x1280"}`)
	if r.status != 200 || r.field("size") != "1080x1920" {
		t.Fatalf("create = %d %s; want size 1080x1920", r.status, r.body)
	}
	creates := v.dash.log.matching("POST", "/api/v1/services/aigc/video-generation/")
	if len(creates) != 1 || !strings.Contains(string(creates[0].Body), `"size":"1080*1920"`) {
		t.Fatalf("creates: %+v", creates)
	}
	if done := (videosFront{base: v.base}).finished(t, r.field("id")); done["size"] != "1080x1920" || done["status"] != "completed" {
		t.Fatalf("finished: %v", done)
	}
}
