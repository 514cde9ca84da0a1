package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const trailingSlashCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider video {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models seedance-sim
		}
		provider chat {
			base_url {{recorder}}/v1
			api_key chat-upstream-key
			models gpt-x
		}
		key mg-slash {
			account slash
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		@models path /v1/models /v1/models/*
		mediagw_models @models
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		mediagw_videos /v1/videos*
		@images path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @images
		mediagw_route
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		api_key sim-upstream-key
	}
}
`

// TestTrailingSlashIsNoEndpoint: the gateway's own collections with a trailing slash
// (/v1/models/, /v1/videos/, /api/v3/contents/generations/tasks/), and its items with a trailing
// or doubled slash (a model's retrieve and an image task's query too, which answered
// model_not_found and task_not_found), are unknown paths, as on the pass-through endpoints: 404 not_found in the
// endpoint's shape, no list, no task created, nothing forwarded. No official SDK sends them
// (openai-go: /models, /videos; the Ark SDK: /contents/generations/tasks). Before, each answered
// the list (a POST created a task).
func TestTrailingSlashIsNoEndpoint(t *testing.T) {
	rec := newRecorder(t)
	base, _ := startSimGateway(t, trailingSlashCaddyfile, map[string]string{"recorder": rec.URL})
	const key = "mg-slash"
	task := call(t, "POST", base+"/api/v3/contents/generations/tasks", key, `{"model":"seedance-sim","content":[{"type":"text","text":"a harbour"}]}`).field("id")
	video := call(t, "POST", base+"/v1/videos", key, `{"model":"seedance-sim","prompt":"a lighthouse"}`).field("id")
	if task == "" || video == "" {
		t.Fatalf("creates: task %q, video %q", task, video)
	}
	const tasks = "/api/v3/contents/generations/tasks"
	for _, tc := range []struct {
		method, path string
		body         any
		message      string
	}{
		{"GET", "/v1/models/", nil, "no such endpoint"},
		{"HEAD", "/v1/models/", nil, ""},
		{"GET", "/v1/models/seedance-sim/", nil, "no such endpoint"},
		{"GET", "/v1/models//seedance-sim", nil, "no such endpoint"},
		{"GET", "/v1/images/tasks/", nil, "no such image endpoint"},
		{"GET", "/v1/images/tasks/imgtask_1/", nil, "no such image endpoint"},
		{"GET", "/v1/images/tasks//imgtask_1", nil, "no such image endpoint"},
		{"GET", "/v1/videos/", nil, "no such endpoint of the video API"},
		{"POST", "/v1/videos/", `{"model":"seedance-sim","prompt":"a second lighthouse"}`, "no such endpoint of the video API"},
		{"GET", "/v1/videos/" + video + "/", nil, "no such endpoint of the video API"},
		{"GET", "/v1/videos//" + video, nil, "no such endpoint of the video API"},
		{"GET", "/v1/videos/" + video + "/content/", nil, "no such endpoint of the video API"},
		{"GET", tasks + "/", nil, "no such endpoint of the video task API"},
		{"POST", tasks + "/", `{"model":"seedance-sim","content":[{"type":"text","text":"a second harbour"}]}`, "no such endpoint of the video task API"},
		{"GET", tasks + "/" + task + "/", nil, "no such endpoint of the video task API"},
		{"DELETE", tasks + "/" + task + "/", nil, "no such endpoint of the video task API"},
		{"GET", tasks + "//" + task, nil, "no such endpoint of the video task API"},
		{"GET", tasks + "/" + task + "/content/", nil, "no such endpoint of the video task API"},
	} {
		r := call(t, tc.method, base+tc.path, key, tc.body)
		if r.status != http.StatusNotFound {
			t.Errorf("%s %s = %d %s, want 404", tc.method, tc.path, r.status, r.body)
			continue
		}
		if tc.method == "HEAD" {
			continue
		}
		var openai struct {
			Error struct{ Message, Code string } `json:"error"`
		}
		var ark struct {
			Code, Message string
			Data          json.RawMessage
		}
		if strings.HasPrefix(tc.path, tasks) {
			decodeJSON(t, r.body, &ark)
			if ark.Code != "not_found" || ark.Message != tc.message || string(ark.Data) != "null" {
				t.Errorf("%s %s = %s, want the task API's not_found %q", tc.method, tc.path, r.body, tc.message)
			}
		} else {
			decodeJSON(t, r.body, &openai)
			if openai.Error.Code != "not_found" || openai.Error.Message != tc.message {
				t.Errorf("%s %s = %s, want OpenAI's not_found %q", tc.method, tc.path, r.body, tc.message)
			}
		}
	}
	// Nothing was created by the refused POSTs, and nothing was forwarded.
	var list struct{ Data []struct{ ID string } }
	decodeJSON(t, call(t, "GET", base+"/v1/videos", key, nil).body, &list)
	if len(list.Data) != 2 {
		t.Errorf("videos after the refusals = %+v, want the two created", list.Data)
	}
	rec.mu.Lock()
	forwarded := len(rec.requests)
	rec.mu.Unlock()
	if forwarded != 0 {
		t.Errorf("%d requests reached the pass-through upstream", forwarded)
	}
	// The paths themselves still answer.
	for _, path := range []string{"/v1/models", "/v1/models/seedance-sim", "/v1/videos", tasks, "/v1/videos/" + video, tasks + "/" + task} {
		if r := call(t, "GET", base+path, key, nil); r.status != http.StatusOK {
			t.Errorf("GET %s = %d %s", path, r.status, r.body)
		}
	}
}
