package videotask

import (
	"encoding/json"
	"testing"

	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"

	"github.com/mediagw/mediagw/internal/arknewer"
	"github.com/mediagw/mediagw/storage"
)

// Whatever an upstream answers about a task (any JSON object), the client's answer, as the query
// and the callbacks write it and as the list writes its item, decodes into the Ark Go SDK's task
// structs and into the members newer SDK releases type.
func FuzzAnswerDecodesAsArkTask(f *testing.F) {
	const ok = `"content":{"video_url":"https://cdn.example.com/v.mp4"}`
	for _, seed := range []string{
		`{"status":"succeeded",` + ok + `,"usage":"lots"}`,
		`{"status":"succeeded",` + ok + `,"usage":{"completion_tokens":"12","total_tokens":1.2e1,"prompt_tokens_details":[]}}`,
		`{"status":"succeeded",` + ok + `,"usage":{"completion_tokens":"x","completion_tokens":12}}`,
		`{"status":"succeeded","content":{"video_url":"https://cdn.example.com/v.mp4","file_url":5,"FILE_URL":{}}}`,
		`{"status":"succeeded","content":[]}`,
		`{"status":"succeeded","content":{"video_url":"file:///etc/passwd"}}`,
		`{"status":"succeeded","content":{"video_url":"https://cdn.example.com/v.mp4","last_frame_url":"javascript:x"}}`,
		`{"status":"running","seed":"x","Seed":1.5,"framespersecond":"24","frames":1e400,"priority":3000000000}`,
		`{"status":"running","error":"boom","failure_reason":"boom","model":7,"callback_url":5}`,
		`{"status":3,"generate_audio":"yes","draft":1,"service_tier":5,"execution_expires_after":"48h"}`,
		`{"status":"running","tools":{"type":"x"},"HttpHeader":5,"httpheader":{"X":["y"]}}`,
		`{"status":"running","tools":[5,{"type":7},null,{"type":"web_search"}]}`,
		`{"status":"failed","error":{"message":"boom","Code":5,"MESSAGE":[]}}`,
		`{"status":"failed","failure_reason":{"code":"E1","message":"boom","code":3}}`,
		`{"status":"running","revised_prompt":{},"safety_identifier":1,"draft_task_id":[],"subdivisionlevel":true}`,
		"{\"status\":\"running\",\"\u017feed\":\"x\",\"usage\":{\"total_to\u212aens\":\"x\"}}", // ſeed, K (Kelvin): seed, tokens
		`{"status":"running","usage":{"prompt_tokens_details":{"cached_tokens":-1e30,"audio_tokens":"1"},"completion_tokens_details":null}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var up map[string]json.RawMessage
		if json.Unmarshal(body, &up) != nil {
			return
		}
		fields, _ := queryResult(up, storage.Task{ID: "cgt-9", Model: "m", CreatedAt: 10, UpdatedAt: 11})
		answer, err := encodeAnswer(fields, true)
		if err != nil {
			t.Fatalf("encodeAnswer: %v", err)
		}
		var got model.GetContentGenerationTaskResponse
		if err := json.Unmarshal(answer, &got); err != nil {
			t.Fatalf("the Ark SDK cannot decode the answer to %s: %v\n%s", body, err, answer)
		}
		var newer arknewer.Task
		if err := json.Unmarshal(answer, &newer); err != nil {
			t.Fatalf("newer Ark SDKs cannot decode the answer to %s: %v\n%s", body, err, answer)
		}
		item := listItem(answer)
		var listed model.ListContentGenerationTaskItem
		if err := json.Unmarshal(item, &listed); err != nil {
			t.Fatalf("the Ark SDK cannot decode the list item of %s: %v\n%s", body, err, item)
		}
		if got.ID != "cgt-9" || got.Model != "m" || listed.ID != "cgt-9" {
			t.Fatalf("answer %s names another task", answer)
		}
	})
}

// The members that have their declared type are kept as the upstream wrote them.
func TestAnswerKeepsRightMembers(t *testing.T) {
	body := `{"status":"succeeded","content":{"video_url":"https://cdn.example.com/v.mp4?a=1&b=2","file_url":"https://cdn.example.com/f"},` +
		`"usage":{"completion_tokens":12,"total_tokens":"12","extra":[1]},"seed":7,"framespersecond":24,"priority":-5,` +
		`"generate_audio":false,"draft":null,"tools":[{"type":"web_search","x":1}],"other":{"any":"thing"}}`
	var up map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &up); err != nil {
		t.Fatal(err)
	}
	fields, status := queryResult(up, storage.Task{ID: "cgt-9", Model: "m"})
	got := fields.asMap()
	for name, want := range map[string]string{
		"content":         `{"file_url":"https://cdn.example.com/f","video_url":"https://cdn.example.com/v.mp4?a=1&b=2"}`,
		"usage":           `{"completion_tokens":12,"extra":[1]}`,
		"seed":            `7`,
		"framespersecond": `24`,
		"priority":        `-5`,
		"generate_audio":  `false`,
		"draft":           `null`,
		"tools":           `[{"type":"web_search","x":1}]`,
		"other":           `{"any":"thing"}`,
	} {
		if string(got[name]) != want {
			t.Errorf("%s = %s, want %s", name, got[name], want)
		}
	}
	if status != StatusSucceeded {
		t.Errorf("status %s, want succeeded", status)
	}
}

// resultAddress takes an absolute http(s) URL with a host, and an adapted task's own content
// path; nothing else.
func TestResultAddress(t *testing.T) {
	adapted := storage.Task{ID: "cgt-9", UpstreamID: "up-1"}
	for _, tc := range []struct {
		s    string
		t    storage.Task
		want bool
	}{
		{"https://cdn.example.com/v.mp4", storage.Task{}, true},
		{"HTTP://cdn.example.com:8080/v.mp4?sig=x", storage.Task{}, true},
		{"http://127.0.0.1/v.mp4", storage.Task{}, true}, // a client's to follow; the gateway never fetches it
		{"/api/v3/contents/generations/tasks/cgt-9/content", adapted, true},
		{"/api/v3/contents/generations/tasks/cgt-9/content", storage.Task{ID: "cgt-9"}, false},
		{"/api/v3/contents/generations/tasks/cgt-8/content", adapted, false},
		{"", storage.Task{}, false},
		{"file:///etc/passwd", storage.Task{}, false},
		{"javascript:alert(1)", storage.Task{}, false},
		{"https:cdn.example.com/v.mp4", storage.Task{}, false},
		{"//cdn.example.com/v.mp4", storage.Task{}, false},
		{"https://", storage.Task{}, false},
		{"http://:80/", storage.Task{}, false},
		{"https://u:p@cdn.example.com/v.mp4", storage.Task{}, false},
		{"http://[::1", storage.Task{}, false},
		{"ftp://cdn.example.com/v.mp4", storage.Task{}, false},
	} {
		if got := resultAddress(tc.s, tc.t); got != tc.want {
			t.Errorf("resultAddress(%q, %+v) = %v, want %v", tc.s, tc.t, got, tc.want)
		}
	}
}

// A queued answer over a task recorded running reads running; over a queued one, queued.
func TestQueuedAfterRunningStaysRunning(t *testing.T) {
	up := map[string]json.RawMessage{"status": json.RawMessage(`"queued"`)}
	for recorded, want := range map[string]string{StatusRunning: StatusRunning, StatusQueued: StatusQueued, "": StatusQueued} {
		fields, status := queryResult(up, storage.Task{ID: "cgt-9", Status: recorded})
		if status != want || string(fields.get("status")) != `"`+want+`"` {
			t.Errorf("recorded %q: status %s (%s), want %s", recorded, status, fields.get("status"), want)
		}
	}
}
