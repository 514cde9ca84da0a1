package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// passTaskEndsCaddyfile is the README's pass-through form with a priced asynchronous image model
// (on an image task provider) and a priced video model (on a videos provider), a key that may
// have one unfinished task, and the usage log in a file.
const passTaskEndsCaddyfile = `{
	{{globals}}
	log usage {
		output file {{usage_log}} {
			roll_disabled
		}
		format json
		include mediagw.usage
	}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  upstream-key
			models   image-async
		}
		provider videos {
			base_url {{videos_url}}/v1
			api_key  upstream-key
			models   sora-2
		}
		price image-async {
			image 0.05
			image 1024x1024 low 0.01
		}
		price sora-2 {
			second 0.10
		}
		key mg-task-ends {
			account painters
			max_active_tasks 1
		}
	}
}
` + readmePassThroughSite

// TestPassThroughTaskEndsSeenWhole, on the README's pass-through site (mediagw_route serves the
// creates and the queries), with a key that may have one unfinished task:
//   - a succeeded image task whose query answers its two images in base64 (a 400 KB answer, far
//     past the 64 KiB the gateway holds of a query's answer) ends with that query: it is charged
//     the two low images it reports (0.02, not the 0.05 held, which it stayed held at until its
//     lease ended before), the client gets the whole answer, and the key's slot is free;
//   - an image generation whose create's answer shows its task failed already is released at
//     once, with no query (it stayed held, and its slot taken, until a query or its lease);
//   - the task_finished usage record of each pass-through task, image or video, names the
//     endpoint of its create as the create's request record names it (/v1/images/generations,
//     /v1/videos, a remix's /v1/videos/{id}; it was empty).
func TestPassThroughTaskEndsSeenWhole(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, upURL := newImageTaskUpstream(t)
	videos := &passThroughVideosUpstream{status: map[string]string{}}
	videosSrv := httptest.NewServer(videos)
	t.Cleanup(videosSrv.Close)
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, g := startSimGateway(t, passTaskEndsCaddyfile, map[string]string{
		"upstream_url": upURL, "videos_url": videosSrv.URL, "usage_log": usageLog})
	keysEnv{g: g}.credit(t, "painters", "2", "task-ends-1")
	balance := func(want, held string) { t.Helper(); awaitBalance(t, g, "painters", want, held) }
	client := imageTaskClient{t: t, base: base, key: "mg-task-ends"}
	generate := func(prompt string) string {
		t.Helper()
		return client.create("/v1/images/generations", `{"model":"image-async","prompt":"`+prompt+`","size":"1024x1024","quality":"auto"}`)
	}

	large := generate("a lighthouse")
	balance("1.95", "0.05")
	const b64 = 200_000
	fake.set(large, imageTaskState{status: "succeeded", images: 2, size: "1024x1024", quality: "low", b64: b64})
	r := call(t, http.MethodGet, base+"/v1/images/tasks/"+large, "mg-task-ends", nil)
	if r.status != http.StatusOK || r.field("status") != "succeeded" || len(r.body) < 2*b64 {
		t.Fatalf("query = %d, status %q, %d bytes; want the whole succeeded answer", r.status, r.field("status"), len(r.body))
	}
	balance("1.98", "0") // two low images

	failed := generate("a harbour [fails]") // the key's one slot: free again
	balance("1.98", "0")                    // released with no query

	video := call(t, http.MethodPost, base+"/v1/videos", "mg-task-ends", `{"model":"sora-2","prompt":"a tower","seconds":"4","size":"1280x720"}`)
	if video.status != http.StatusOK || video.field("id") == "" {
		t.Fatalf("video create = %d %s; want the slot free", video.status, video.body)
	}
	balance("1.58", "0.4")
	videos.set(video.field("id"), "failed")
	if r := call(t, http.MethodGet, base+"/v1/videos/"+video.field("id"), "mg-task-ends", nil); r.status != http.StatusOK {
		t.Fatalf("video retrieve = %d %s", r.status, r.body)
	}
	balance("1.98", "0")

	// A remix's create is labelled as its request record labels it, which its record keeps.
	remix := call(t, http.MethodPost, base+"/v1/videos/"+video.field("id")+"/remix", "mg-task-ends", `{"prompt":"at night"}`)
	if remix.status != http.StatusOK || remix.field("id") == "" {
		t.Fatalf("remix = %d %s", remix.status, remix.body)
	}
	balance("1.58", "0.4") // the source's 4 s at 1280x720
	videos.set(remix.field("id"), "failed")
	if r := call(t, http.MethodGet, base+"/v1/videos/"+remix.field("id"), "mg-task-ends", nil); r.status != http.StatusOK {
		t.Fatalf("remix retrieve = %d %s", r.status, r.body)
	}
	balance("1.98", "0")

	want := map[string]string{large: "/v1/images/generations succeeded 0.02", failed: "/v1/images/generations failed nothing",
		video.field("id"): "/v1/videos failed nothing", remix.field("id"): "/v1/videos/{id} failed nothing"}
	finished := map[string]string{}
	for deadline := time.Now().Add(30 * time.Second); len(finished) < len(want) && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		finished = map[string]string{}
		for _, rec := range readUsageLog(t, usageLog, "painters") {
			if rec.Event == "task_finished" {
				amount := rec.Amount
				if amount == "" {
					amount = "nothing"
				}
				finished[rec.TaskID] = rec.Endpoint + " " + rec.Status + " " + amount
			}
		}
	}
	if fmt.Sprint(finished) != fmt.Sprint(want) {
		t.Fatalf("task_finished records %v; want %v", finished, want)
	}
}
