package integration

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// adaptorProviders are the mediagw lines of three providers of other protocols, each a strict
// fake in this process: Wan (dashscope), Kling and an OpenAI videos upstream.
const adaptorProviders = `provider wan {
			base_url %s
			api_key dash-upstream-key
			protocol dashscope
			models wan2.2-t2v-plus
		}
		provider kling {
			base_url %s
			access_key kling-access-key
			secret_key kling-secret-key
			protocol kling
			models kling-v2-1-master
		}
		provider sora {
			base_url %s
			api_key openai-upstream-key
			protocol openai
			models sora-2
		}`

// TestInstancesShareAdaptorTasks: three gateway processes on one redis-server. Wan, Kling and
// OpenAI videos tasks are all created on A; B reads them at once, another account gets the
// unknown-id answer on C; nobody polls them after that, so the watchers (whichever instance holds
// each task's shard) drive them to success at the fakes, and each task's succeeded callback is
// delivered once. Then C answers every task succeeded, and B streams the OpenAI task's
// credentialed result to its owner only. Each fake received each task's create once.
func TestInstancesShareAdaptorTasks(t *testing.T) {
	t.Parallel()
	dash, dashURL := newFakeDashScope(t, "dash-upstream-key")
	kling, klingURL := newFakeKling(t, "kling-access-key", "kling-secret-key")
	oai, oaiURL := newFakeOpenAIVideos(t, "openai-upstream-key")
	c := startCluster(t, 3, clusterOptions{watchInterval: "200ms",
		gatewayOptions: fmt.Sprintf(adaptorProviders, dashURL, klingURL, oaiURL)})
	a, b, cc := c.instances[0], c.instances[1], c.instances[2]
	rc := newReceiver(t, func(int) int { return 200 })

	models := []string{"wan2.2-t2v-plus", "kling-v2-1-master", "sora-2", "wan2.2-t2v-plus", "kling-v2-1-master", "sora-2"}
	ids := make([]string, 0, len(models))
	for _, m := range models {
		r := call(t, "POST", a.base+taskPath, "mg-alice", map[string]any{"model": m, "callback_url": rc.URL,
			"content": []any{map[string]any{"type": "text", "text": "a harbour at night"}}})
		id := r.field("id")
		if r.status != 200 || !strings.HasPrefix(id, "cgt-") {
			t.Fatalf("create of %s on A: %d %s", m, r.status, r.body)
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		r := call(t, "GET", b.base+taskPath+"/"+id, "mg-alice", nil)
		if r.status != 200 || r.field("id") != id || r.field("model") != models[i] {
			t.Fatalf("read on B of %s: %d %s", id, r.status, r.body)
		}
		if r := call(t, "GET", cc.base+taskPath+"/"+id, "mg-bob", nil); r.status != 400 || r.field("code") != "task_not_exist" {
			t.Fatalf("bob's read on C: %d %s", r.status, r.body)
		}
	}

	succeeded := func() map[string]int {
		n := map[string]int{}
		for _, d := range rc.seen() {
			var m struct{ ID, Status string }
			decodeJSONQuiet(d.body, &m)
			if m.Status == "succeeded" {
				n[m.ID]++
			}
		}
		return n
	}
	waitFor(t, "a succeeded callback of every task", func() bool { return len(succeeded()) == len(ids) })
	time.Sleep(time.Second) // a second delivery, if any, has its time to arrive
	for _, id := range ids {
		if n := succeeded()[id]; n != 1 {
			t.Fatalf("task %s: %d succeeded callbacks, want 1", id, n)
		}
	}
	events := map[string]string{}
	for _, d := range rc.seen() {
		var m struct{ ID, Status string }
		decodeJSONQuiet(d.body, &m)
		if prev, ok := events[m.ID+"/"+m.Status]; ok && prev != d.id {
			t.Fatalf("event %s/%s under two webhook-ids", m.ID, m.Status)
		}
		events[m.ID+"/"+m.Status] = d.id
	}

	for i, id := range ids {
		r := call(t, "GET", cc.base+taskPath+"/"+id, "mg-alice", nil)
		if r.status != 200 || r.field("status") != "succeeded" {
			t.Fatalf("task %s (%s) on C: %d %s", id, models[i], r.status, r.body)
		}
		if models[i] != "sora-2" {
			continue
		}
		var answer struct {
			Content struct {
				VideoURL string `json:"video_url"`
			} `json:"content"`
		}
		decodeJSONQuiet(r.body, &answer)
		if !strings.HasSuffix(answer.Content.VideoURL, "/tasks/"+id+"/content") {
			t.Fatalf("openai task's video_url: %s", r.body)
		}
		video := call(t, "GET", b.base+taskPath+"/"+id+"/content", "mg-alice", nil)
		if video.status != 200 || !bytes.Equal(video.body, oai.Video) {
			t.Fatalf("content on B: %d %q", video.status, video.body)
		}
		if r := call(t, "GET", b.base+taskPath+"/"+id+"/content", "mg-bob", nil); r.status != 400 || r.field("code") != "task_not_exist" {
			t.Fatalf("bob's content on B: %d %s", r.status, r.body)
		}
	}
	creates := len(dash.log.matching("POST", "/api/v1/services/")) + len(kling.log.matching("POST", "/v1/videos/")) + len(oai.log.matching("POST", "/v1/videos"))
	if creates != len(ids) {
		t.Fatalf("%d creates reached the fakes for %d tasks", creates, len(ids))
	}
}
