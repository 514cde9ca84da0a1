package integration

import (
	"net/http"
	"strings"
	"testing"
)

// withVideosFront is caddyfile (videoProvidersCaddyfile or a variant) with mediagw_videos in the
// route before the task API.
func withVideosFront(t *testing.T, caddyfile string) string {
	t.Helper()
	const routeLine = "mediagw_video_tasks /api/v3/contents/generations/tasks* {"
	with := strings.Replace(caddyfile, routeLine, "mediagw_videos /v1/videos* {\n\t\t\trefresh_interval 100ms\n\t\t}\n\t\t"+routeLine, 1)
	if with == caddyfile {
		t.Fatal("the video providers' Caddyfile no longer has the line that mediagw_videos goes before")
	}
	return with
}

// TestVideosFrontOwnershipOnEveryProtocol: through the OpenAI-style front, a video of each
// protocol (DashScope, Gemini, Kling, MiniMax, OpenAI-style) completes for its owner, whose
// content call answers; another account's retrieve, content and delete of it answer exactly as
// for an unknown id, and its list shows none of them.
func TestVideosFrontOwnershipOnEveryProtocol(t *testing.T) {
	base := startVideoProvidersWith(t, withVideosFront(t, videoProvidersCaddyfile)).base

	ids := map[string]string{}
	for _, m := range []string{"wan2.2-t2v-plus", "veo-client", "kling-v2-1-master", "MiniMax-Hailuo-02", "sora-2"} {
		r := call(t, "POST", base+"/v1/videos", "mg-alice", `{"model":"`+m+`","prompt":"a lighthouse at dawn"}`)
		if r.status != 200 || !strings.HasPrefix(r.field("id"), "cgt-") {
			t.Fatalf("create %s = %d %s", m, r.status, r.body)
		}
		ids[m] = r.field("id")
	}
	front := videosFront{base: base}
	for m, id := range ids {
		if v := front.finished(t, id); v["status"] != "completed" {
			t.Fatalf("%s: %v", m, v)
		}
		if c := sendAsIs(t, "GET", base+"/v1/videos/"+id+"/content", "mg-alice"); c.status != http.StatusOK && c.status != http.StatusFound {
			t.Fatalf("%s: the owner's content = %d %s", m, c.status, c.body)
		}
		for _, probe := range []struct{ method, suffix string }{{"GET", ""}, {"GET", "/content"}, {"DELETE", ""}} {
			theirs := sendAsIs(t, probe.method, base+"/v1/videos/"+id+probe.suffix, "mg-bob")
			unknown := sendAsIs(t, probe.method, base+"/v1/videos/cgt-000000000000000000000000"+probe.suffix, "mg-bob")
			if theirs.status != http.StatusNotFound || string(theirs.body) != string(unknown.body) {
				t.Fatalf("%s: bob's %s%s = %d %s; an unknown id's = %d %s", m, probe.method, probe.suffix, theirs.status, theirs.body, unknown.status, unknown.body)
			}
		}
	}
	if list := call(t, "GET", base+"/v1/videos", "mg-bob", nil); list.status != 200 || !strings.Contains(string(list.body), `"data":[]`) {
		t.Fatalf("bob's list = %d %s", list.status, list.body)
	}
	if r := call(t, "GET", base+"/v1/videos/"+ids["sora-2"], "mg-alice", nil); r.status != 200 {
		t.Fatalf("alice's video after bob's delete = %d %s", r.status, r.body)
	}
}
