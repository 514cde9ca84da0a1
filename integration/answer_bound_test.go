package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// TestTaskRecordKeepsABoundedAnswer: an Ark upstream whose task answers carry megabytes beyond
// the contract (an unknown member of 3 MiB, one in content, one in error, thousands of small
// ones) has its tasks answered, and so recorded, with every contract member and the small
// members a typed client declares (usage, seed, framespersecond), a small unknown one too, and
// without the rest: each answer stays within a few kilobytes. Before, everything up to the
// upstream body bound (4 MiB) was stored with the task and sent at every poll. A result address
// longer than 16 KiB is no result: the task reads running.
func TestTaskRecordKeepsABoundedAnswer(t *testing.T) {
	up, base := startScripted(t, hostileAnswersCaddyfile)
	tasks := base + "/api/v3/contents/generations/tasks"
	const key = "mg-hostile-answers"
	ark := arkClient(base, key)
	create := func() string {
		t.Helper()
		r := call(t, "POST", tasks, key, `{"model":"video-h","return_last_frame":true,"content":[{"type":"text","text":"a bounded answer"}]}`)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		return r.field("id")
	}
	huge := strings.Repeat("x", 3<<20)
	var many strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&many, `,"m%d":%d`, i, i)
	}
	read := func(id string) (response, map[string]any) {
		t.Helper()
		time.Sleep(30 * time.Millisecond) // past refresh_interval: the read asks the upstream
		r := call(t, "GET", tasks+"/"+id, key, nil)
		if r.status != 200 {
			t.Fatalf("query = %d %.300s", r.status, r.body)
		}
		return r, r.json(t)
	}

	id := create()
	up.set(id, `{"id":"`+id+`","model":"video-h","status":"succeeded","seed":7,"framespersecond":24,"a_note":"kept",`+
		`"usage":{"completion_tokens":108900,"total_tokens":108900},"resolution":"720p","ratio":"16:9","duration":5,`+
		`"padding":"`+huge[:1<<20]+`","content":{"video_url":"https://cdn.example.com/v.mp4","last_frame_url":"https://cdn.example.com/f.png","blob":"`+huge[:1<<20]+`"}`+many.String()+`}`)
	r, m := read(id)
	content, _ := m["content"].(map[string]any)
	usage, _ := m["usage"].(map[string]any)
	if len(r.body) > 12<<10 || m["status"] != "succeeded" || content["video_url"] != "https://cdn.example.com/v.mp4" ||
		content["last_frame_url"] != "https://cdn.example.com/f.png" || content["blob"] != nil || m["padding"] != nil ||
		m["seed"] != 7.0 || m["framespersecond"] != 24.0 || m["a_note"] != "kept" || usage["completion_tokens"] != 108900.0 ||
		m["resolution"] != "720p" || m["ratio"] != "16:9" || m["duration"] != 5.0 {
		t.Fatalf("succeeded answer (%d bytes): %.600s", len(r.body), r.body)
	}
	got, err := ark.GetContentGenerationTask(context.Background(), model.GetContentGenerationTaskRequest{ID: id})
	if err != nil || got.Status != model.StatusSucceeded || got.Seed == nil || *got.Seed != 7 || got.Usage.CompletionTokens != 108900 {
		t.Fatalf("the Ark SDK reads %+v, %v", got, err)
	}

	id = create()
	up.set(id, `{"id":"`+id+`","model":"video-h","status":"running","padding":"`+huge+`"}`)
	if r, m := read(id); len(r.body) > 1<<10 || m["status"] != "running" || m["padding"] != nil {
		t.Fatalf("running answer (%d bytes): %.300s", len(r.body), r.body)
	}
	up.set(id, `{"id":"`+id+`","model":"video-h","status":"failed","error":{"code":"OutputVideoSensitiveContentDetected","message":"the output may be sensitive","trace":"`+huge+`"}}`)
	r, m = read(id)
	e, _ := m["error"].(map[string]any)
	if len(r.body) > 1<<10 || m["status"] != "failed" || e["code"] != "OutputVideoSensitiveContentDetected" || e["message"] != "the output may be sensitive" || e["trace"] != nil {
		t.Fatalf("failed answer (%d bytes): %.300s", len(r.body), r.body)
	}

	id = create()
	long := "https://cdn.example.com/v.mp4?sig=" + strings.Repeat("a", 17<<10)
	up.set(id, `{"id":"`+id+`","model":"video-h","status":"succeeded","content":{"video_url":"`+long+`"}}`)
	if r, m := read(id); m["status"] != "running" || len(r.body) > 1<<10 {
		t.Fatalf("a 17 KiB result address: %.300s", r.body)
	}
}
