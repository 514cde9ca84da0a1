package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/internal/testredis"
)

// keyModelsCaddyfile serves two video models of a fake Ark upstream through both fronts, to one
// account with two keys: mg-km-all may use every model, mg-km-a only video-a.
const keyModelsCaddyfile = `{
	{{globals}}
	mediagw {
		{{storage}}
		provider ark {
			base_url {{ark}}/api/v3
			api_key ark-key
			models video-a video-b
		}
		key mg-km-all {
			account km
		}
		key mg-km-a {
			account km
			models video-a
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_videos /v1/videos*
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// TestKeyModelsHoldOnEveryTaskPath: a key restricted to some models sees and changes nothing of
// its account's tasks of the other models, on both stores and both fronts. Another key of the
// account makes a video-b task (with an Idempotency-Key) and a video-b video; the key that may use
// only video-a gets, for each, what an unknown id gets: a read, a content download and a cancel
// on the task API, a read and a content download on /v1/videos; its lists leave them out (the
// task list's total too, and a filter by their ids); and a retry of the other key's create with
// the same Idempotency-Key and body is refused as the model is, not answered the stored task id.
// Its own video-a task it sees as before. Before the fix each of these showed or reached the
// video-b task.
func TestKeyModelsHoldOnEveryTaskPath(t *testing.T) {
	redis := testredis.Start(t, testredis.Options{})
	for _, store := range []struct{ name, line string }{
		{"badger", "storage badger " + t.TempDir()},
		{"redis", "storage redis " + redis.URL() + " {\n\t\t\tkey_prefix keymodels\n\t\t}"},
	} {
		t.Run(store.name, func(t *testing.T) {
			ark := newArkHeld(t)
			base, _ := startSimGateway(t, keyModelsCaddyfile, map[string]string{"storage": store.line, "ark": ark.URL})
			const all, onlyA = "mg-km-all", "mg-km-a"
			createB := `{"model":"video-b","content":[{"type":"text","text":"b"}]}`
			req, _ := http.NewRequest("POST", base+taskPath, strings.NewReader(createB))
			req.Header.Set("Authorization", "Bearer "+all)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "km-1")
			r := do(t, req)
			taskB := r.field("id")
			if r.status != 200 || taskB == "" {
				t.Fatalf("create video-b = %d %s", r.status, r.body)
			}
			r = call(t, "POST", base+taskPath, onlyA, `{"model":"video-a","content":[{"type":"text","text":"a"}]}`)
			taskA := r.field("id")
			if r.status != 200 || taskA == "" {
				t.Fatalf("create video-a = %d %s", r.status, r.body)
			}
			r = call(t, "POST", base+"/v1/videos", all, `{"model":"video-b","prompt":"b","seconds":"4"}`)
			videoB := r.field("id")
			if r.status != 200 || videoB == "" {
				t.Fatalf("create video-b on /v1/videos = %d %s", r.status, r.body)
			}

			// What an unknown id gets, on each path.
			for _, p := range []struct{ method, path, other string }{
				{"GET", taskPath + "/", ""},
				{"GET", taskPath + "/", "/content"},
				{"DELETE", taskPath + "/", ""},
				{"GET", "/v1/videos/", ""},
				{"GET", "/v1/videos/", "/content"},
			} {
				id := taskB
				if strings.HasPrefix(p.path, "/v1/videos") {
					id = videoB
				}
				unknown := call(t, p.method, base+p.path+"cgt-unknown-1"+p.other, onlyA, nil)
				got := call(t, p.method, base+p.path+id+p.other, onlyA, nil)
				if got.status != unknown.status || got.status < 400 || errorCode(t, got) != errorCode(t, unknown) || errorCode(t, got) == "" {
					t.Errorf("%s %s%s by the video-a key = %d %s; want what an unknown id gets, %d %s", p.method, p.path, p.other, got.status, got.body, unknown.status, unknown.body)
				}
			}
			if r := call(t, "GET", base+taskPath+"/"+taskB, all, nil); r.status != 200 || r.field("id") != taskB {
				t.Fatalf("the video-b task after the video-a key's cancel = %d %s; want it still there for its own key", r.status, r.body)
			}
			if r := call(t, "GET", base+taskPath+"/"+taskA, onlyA, nil); r.status != 200 || r.field("model") != "video-a" {
				t.Fatalf("the video-a key's own task = %d %s", r.status, r.body)
			}

			var list struct {
				Items []struct{ ID, Model string }
				Total int
			}
			decodeJSON(t, call(t, "GET", base+taskPath+"?page_size=50", onlyA, nil).body, &list)
			if list.Total != 1 || len(list.Items) != 1 || list.Items[0].ID != taskA {
				t.Errorf("the video-a key's task list = %+v; want only %s, total 1", list, taskA)
			}
			decodeJSON(t, call(t, "GET", base+taskPath+"?filter.task_ids="+taskB, onlyA, nil).body, &list)
			if list.Total != 0 || len(list.Items) != 0 {
				t.Errorf("the video-a key's list filtered by the video-b task's id = %+v; want nothing", list)
			}
			decodeJSON(t, call(t, "GET", base+taskPath+"?page_size=50", all, nil).body, &list)
			if list.Total != 3 {
				t.Errorf("the account-wide key's task list = %+v; want all 3 tasks", list)
			}
			var videos struct{ Data []struct{ ID, Model string } }
			decodeJSON(t, call(t, "GET", base+"/v1/videos?limit=50", onlyA, nil).body, &videos)
			for _, v := range videos.Data {
				if v.Model != "video-a" {
					t.Errorf("the video-a key's /v1/videos list has %+v", v)
				}
			}
			if len(videos.Data) != 1 {
				t.Errorf("the video-a key's /v1/videos list = %+v; want only its video-a task", videos.Data)
			}
			// A cursor at a task it may not see is one it does not have: nothing behind it, as
			// behind an unknown id (not the tasks behind the video-b task).
			for _, order := range []string{"asc", "desc"} {
				decodeJSON(t, call(t, "GET", base+"/v1/videos?order="+order+"&after="+taskB, onlyA, nil).body, &videos)
				if len(videos.Data) != 0 {
					t.Errorf("the video-a key's /v1/videos list after the video-b task (%s) = %+v; want nothing", order, videos.Data)
				}
			}

			// The other key's create, retried with its Idempotency-Key and body.
			req, _ = http.NewRequest("POST", base+taskPath, strings.NewReader(createB))
			req.Header.Set("Authorization", "Bearer "+onlyA)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "km-1")
			r = do(t, req)
			if r.status != 403 || errorCode(t, r) != "model_not_allowed" || strings.Contains(string(r.body), taskB) || r.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("the video-a key's retry of the video-b create = %d %s (replayed %q); want 403 model_not_allowed", r.status, r.body, r.header.Get("Idempotent-Replayed"))
			}
			// The key that made it still gets its answer again.
			req, _ = http.NewRequest("POST", base+taskPath, strings.NewReader(createB))
			req.Header.Set("Authorization", "Bearer "+all)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "km-1")
			if r = do(t, req); r.status != 200 || r.field("id") != taskB || r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("its own key's retry = %d %s; want the stored answer %s", r.status, r.body, taskB)
			}
		})
	}
}

// errorCode is the code of an error answer in the task API's shape ({"code"}) or OpenAI's
// ({"error":{"code"}}).
func errorCode(t *testing.T, r response) string {
	t.Helper()
	if code := r.field("code"); code != "" {
		return code
	}
	return r.apiError(t).code
}

// keyModelsImageCaddyfile serves an asynchronous image model and another to one account with two
// keys: mg-kmi-all may use every model, mg-kmi-other only image-other.
const keyModelsImageCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider images {
			base_url {{upstream}}/v1
			api_key upstream-key
			models image-async image-other
		}
		key mg-kmi-all {
			account kmi
		}
		key mg-kmi-other {
			account kmi
			models image-other
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		@image_edits path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @image_edits
		respond 404
	}
}
`

// TestKeyModelsHoldOnImageTasks: an image task of a model a key may not use answers that key's
// query as an unknown id does, and its retry of the create with the same Idempotency-Key and body
// gets 403 model_not_allowed, not the stored answer (the task's id). Before the fix the query
// answered the task and the retry its id.
func TestKeyModelsHoldOnImageTasks(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/images/edits":
			fmt.Fprint(w, `{"id":"imgt_km1","model":"image-async","status":"queued","created":1}`)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/images/tasks/"):
			fmt.Fprintf(w, `{"id":%q,"model":"image-async","status":"queued","created":1}`, strings.TrimPrefix(r.URL.Path, "/v1/images/tasks/"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(upstream.Close)
	base, _ := startSimGateway(t, keyModelsImageCaddyfile, map[string]string{"upstream": upstream.URL})
	edit := func(key string) response {
		req, _ := http.NewRequest("POST", base+"/v1/images/edits", strings.NewReader(`{"model":"image-async","prompt":"blue","images":[{"image_url":"https://cdn.example.com/a.png"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "kmi-1")
		return do(t, req)
	}
	if r := edit("mg-kmi-all"); r.status != 200 || r.field("id") != "imgt_km1" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", base+"/v1/images/tasks/imgt_km1", "mg-kmi-all", nil); r.status != 200 {
		t.Fatalf("its own key's query = %d %s", r.status, r.body)
	}
	unknown := call(t, "GET", base+"/v1/images/tasks/imgt_unknown", "mg-kmi-other", nil)
	got := call(t, "GET", base+"/v1/images/tasks/imgt_km1", "mg-kmi-other", nil)
	if got.status != unknown.status || got.status != 404 || errorCode(t, got) != errorCode(t, unknown) {
		t.Errorf("the image-other key's query = %d %s; want what an unknown id gets, %d %s", got.status, got.body, unknown.status, unknown.body)
	}
	if r := edit("mg-kmi-other"); r.status != 403 || errorCode(t, r) != "model_not_allowed" || strings.Contains(string(r.body), "imgt_km1") {
		t.Errorf("the image-other key's retry = %d %s; want 403 model_not_allowed", r.status, r.body)
	}
	if r := edit("mg-kmi-all"); r.status != 200 || r.field("id") != "imgt_km1" || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("its own key's retry = %d %s; want the stored answer", r.status, r.body)
	}
}
