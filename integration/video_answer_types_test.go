package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"

	"github.com/mediagw/mediagw/internal/arknewer"
)

// typedAnswersCaddyfile serves both video fronts over an upstream that speaks Ark's task API
// ({{up_url}}/api/v3) and answers task reads as the test scripts them; its model is priced, so
// that a task holds money and settles it, and callbacks go to a receiver on loopback.
const typedAnswersCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark-typed {
			base_url {{up_url}}/api/v3
			api_key typed-up-key
			models video-t
		}
		price video-t {
			second 0.01
		}
		key mg-typed {
			account typed
		}
		callbacks {
			allow_private
			retry_schedule 200ms 200ms
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_videos /v1/videos* {
			refresh_interval 10ms
		}
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 10ms
		}
		respond 404
	}
}
`

// newerArkTask is what a newer Ark Go SDK release reads from a task answer (arknewer.Task), with
// the failure_reason that its list items carry.
type newerArkTask struct {
	arknewer.Task
	FailureReason *model.ContentGenerationError `json:"failure_reason"`
}

// decodesAsArkTask fails the test unless body decodes as both the Ark SDK's task answer and the
// members newer releases type.
func decodesAsArkTask(t *testing.T, what string, body []byte) model.GetContentGenerationTaskResponse {
	t.Helper()
	var got model.GetContentGenerationTaskResponse
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s does not decode as the Ark SDK's task answer: %v\n%s", what, err, body)
	}
	var newer newerArkTask
	if err := json.Unmarshal(body, &newer); err != nil {
		t.Fatalf("%s does not decode as newer Ark SDK releases type it: %v\n%s", what, err, body)
	}
	return got
}

// TestArkAnswerMemberTypes: an Ark upstream that reports a member of a task's answer with a JSON
// type other than the one the Ark Go SDK's task structs declare (usage a string, a usage count
// a string, content an array, seed a string, framespersecond a string, error a string, model or
// status a number, generate_audio a string, tools an object, a member named HttpHeader, a
// case-variant Seed, ...) must not make the answer undecodable: the GET (read by the official
// Ark Go SDK), the list (read by the SDK, filtered to the task), the callback's body and both
// /v1/videos answers (read by openai-go) all decode, the wrong member is left out (or, for
// members the contract requires, written as it says), and the members that were right are kept.
// Before the fix each of these answers passed the member through and the SDK failed the whole
// answer ("json: cannot unmarshal string into Go struct field ... of type int").
func TestArkAnswerMemberTypes(t *testing.T) {
	up, base := startScripted(t, typedAnswersCaddyfile)
	tasks := base + "/api/v3/contents/generations/tasks"
	const key = "mg-typed"
	ark := arkClient(base, key)
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	ctx := context.Background()

	// Each answer is a success with these right members, one of them replaced or one wrong
	// member added; check says what the client must read.
	const right = `"id":"%[1]s","model":"video-t","status":"succeeded","content":{"video_url":"https://cdn.example.com/%[1]s.mp4"},` +
		`"usage":{"completion_tokens":12,"total_tokens":12},"seed":7,"revised_prompt":"rp","created_at":1700000000,"updated_at":1700000100,` +
		`"framespersecond":24,"generate_audio":true,"service_tier":"default"`
	type check func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any)
	keptRight := func(except ...string) check {
		return func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
			t.Helper()
			want := map[string]bool{}
			for _, e := range except {
				want[e] = true
			}
			if !want["status"] && (got.Status != model.StatusSucceeded || !strings.HasPrefix(got.Content.VideoURL, "https://cdn.example.com/")) {
				t.Errorf("status %q content %+v; want succeeded with the upstream's video", got.Status, got.Content)
			}
			if !want["usage"] && (got.Usage.CompletionTokens != 12 || got.Usage.TotalTokens != 12) {
				t.Errorf("usage %+v; want the upstream's 12 tokens", got.Usage)
			}
			if !want["seed"] && (got.Seed == nil || *got.Seed != 7) {
				t.Errorf("seed %v; want 7", got.Seed)
			}
			if got.RevisedPrompt == nil || *got.RevisedPrompt != "rp" || got.Model != "video-t" || got.CreatedAt != 1700000000 {
				t.Errorf("answer %+v lost a right member", got)
			}
			for name, v := range map[string]any{"framespersecond": 24.0, "generate_audio": true, "service_tier": "default"} {
				if !want[name] && raw[name] != v {
					t.Errorf("%s = %v; want the upstream's %v", name, raw[name], v)
				}
			}
		}
	}
	absent := func(name string, c check) check {
		return func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
			t.Helper()
			if v, has := raw[name]; has {
				t.Errorf("%s = %v is in the answer; want it left out", name, v)
			}
			c(t, got, raw)
		}
	}
	for _, tc := range []struct {
		name, answer string // answer: %[1]s is the task id
		check        check
	}{
		{"usage a string", `{` + right + `,"usage":"lots"}`, absent("usage", keptRight("usage"))},
		{"a usage count a string", `{` + right + `,"usage":{"completion_tokens":"12","total_tokens":12}}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if got.Usage.TotalTokens != 12 || got.Usage.CompletionTokens != 0 {
					t.Errorf("usage %+v; want total_tokens kept, completion_tokens left out", got.Usage)
				}
				keptRight("usage")(t, got, raw)
			}},
		{"a usage count given twice", `{` + right + `,"usage":{"completion_tokens":"x","completion_tokens":12,"total_tokens":12}}`, keptRight()},
		{"usage details of the wrong type", `{` + right + `,"usage":{"completion_tokens":12,"total_tokens":12,"prompt_tokens_details":[],"completion_tokens_details":{"reasoning_tokens":"0","audio_tokens":"1"}}}`, keptRight()},
		{"a usage count with an exponent", `{` + right + `,"usage":{"completion_tokens":1.2e1,"total_tokens":12.0}}`, keptRight()},
		{"content an array", `{` + right + `,"content":[]}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if got.Status != model.StatusRunning || got.Content.VideoURL != "" {
					t.Errorf("status %q content %+v; want running without a result", got.Status, got.Content)
				}
			}},
		{"content.video_url a number", `{` + right + `,"content":{"video_url":5}}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if got.Status != model.StatusRunning {
					t.Errorf("status %q; want running", got.Status)
				}
			}},
		{"content.file_url a number", `{` + right + `,"content":{"video_url":"https://cdn.example.com/%[1]s.mp4","file_url":5,"File_URL":[]}}`, keptRight()},
		{"seed a string", `{` + right + `,"seed":"x"}`, absent("seed", keptRight("seed"))},
		{"seed a fraction", `{` + right + `,"seed":7.5}`, absent("seed", keptRight("seed"))},
		{"a case-variant Seed", `{` + right + `,"SEED":"x"}`, absent("SEED", keptRight())},
		{"framespersecond a string", `{` + right + `,"framespersecond":"24"}`, absent("framespersecond", keptRight("framespersecond"))},
		{"frames and priority out of their types", `{` + right + `,"frames":"121","priority":3000000000}`, absent("priority", absent("frames", keptRight()))},
		{"error a string", `{` + right + `,"error":"boom"}`, keptRight()},
		{"model a number", `{` + right + `,"model":7}`, keptRight()},
		{"status a number", `{` + right + `,"status":3}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if got.Status != model.StatusRunning {
					t.Errorf("status %q; want running (a status that is not a string is no known state)", got.Status)
				}
			}},
		{"generate_audio, draft and service_tier of other types", `{` + right + `,"generate_audio":"yes","draft":1,"service_tier":5}`,
			absent("draft", absent("service_tier", absent("generate_audio", keptRight("generate_audio", "service_tier"))))},
		{"execution_expires_after and draft_task_id of other types", `{` + right + `,"execution_expires_after":"48h","draft_task_id":9}`,
			absent("execution_expires_after", absent("draft_task_id", keptRight()))},
		{"callback_url a number", `{` + right + `,"callback_url":5}`, keptRight()},
		{"tools an object", `{` + right + `,"tools":{"type":"web_search"}}`, absent("tools", keptRight())},
		{"tools with wrong elements", `{` + right + `,"tools":[5,{"type":7},{"type":"web_search"}]}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if fmt.Sprint(raw["tools"]) != "[map[] map[type:web_search]]" {
					t.Errorf("tools = %v; want the elements that fit", raw["tools"])
				}
				keptRight()(t, got, raw)
			}},
		{"a member named HttpHeader", `{` + right + `,"HttpHeader":5,"httpheader":{"X-Injected":["1"]}}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if raw["HttpHeader"] != nil || raw["httpheader"] != nil {
					t.Errorf("answer %v; want no HttpHeader member", raw)
				}
				keptRight()(t, got, raw)
			}},
		{"failure_reason a string on a success", `{` + right + `,"failure_reason":"boom"}`, absent("failure_reason", keptRight())},
		{"a failure with error a string", `{"id":"%[1]s","status":"failed","error":"boom","seed":7}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if got.Status != model.StatusFailed || got.Error == nil || got.Error.Message == "" || got.Seed == nil || *got.Seed != 7 {
					t.Errorf("status %q error %+v seed %v; want failed with a message, seed 7", got.Status, got.Error, got.Seed)
				}
			}},
		{"a failure whose error has a case-variant code", `{"id":"%[1]s","status":"failed","error":{"message":"boom","Code":5,"MESSAGE":[]}}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if got.Status != model.StatusFailed || got.Error == nil || got.Error.Message != "boom" || got.Error.Code != "" {
					t.Errorf("status %q error %+v; want failed with the message boom and no code", got.Status, got.Error)
				}
			}},
		{"a failure with failure_reason only", `{"id":"%[1]s","status":"failed","failure_reason":{"code":"E1","message":"boom","code_detail":[1]}}`,
			func(t *testing.T, got model.GetContentGenerationTaskResponse, raw map[string]any) {
				if got.Error == nil || got.Error.Code != "E1" || got.Error.Message != "boom" {
					t.Errorf("error %+v; want the upstream's failure_reason", got.Error)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, "POST", tasks, key, fmt.Sprintf(`{"model":"video-t","content":[{"type":"text","text":"typed"}],"callback_url":%q}`, rc.URL+"/hooks"))
			id := r.field("id")
			if r.status != 200 || id == "" {
				t.Fatalf("create = %d %s", r.status, r.body)
			}
			up.set(id, fmt.Sprintf(tc.answer, id))
			time.Sleep(20 * time.Millisecond) // past refresh_interval: the read asks the upstream

			got, err := ark.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id})
			if err != nil {
				t.Fatalf("the Ark SDK cannot read the task: %v", err)
			}
			raw := call(t, "GET", tasks+"/"+id, key, nil)
			decodesAsArkTask(t, "the task's answer", raw.body)
			tc.check(t, got, raw.json(t))

			list, err := ark.ListContentGenerationTasks(ctx, model.ListContentGenerationTasksRequest{Filter: &model.ListContentGenerationTasksFilter{TaskIDs: []*string{&id}}})
			if err != nil || len(list.Items) != 1 || list.Items[0].ID != id || list.Items[0].Status != got.Status {
				t.Fatalf("the Ark SDK's list = %+v, %v; want the task, %s", list, err, got.Status)
			}
			var items struct{ Items []json.RawMessage }
			decodeJSON(t, call(t, "GET", tasks+"?filter.task_ids="+id, key, nil).body, &items)
			if len(items.Items) != 1 {
				t.Fatalf("list items %d; want 1", len(items.Items))
			}
			decodesAsArkTask(t, "the list's item", items.Items[0])

			var body []byte
			waitFor(t, "the "+got.Status+" callback", func() bool {
				for _, d := range rc.seen() {
					if strings.Contains(string(d.body), id) && d.status == got.Status {
						body = d.body
						return true
					}
				}
				return false
			})
			if cb := decodesAsArkTask(t, "the callback's body", body); cb.Status != got.Status || cb.ID != id {
				t.Fatalf("callback %+v; want the task, %s", cb, got.Status)
			}

			v, err := oa.Videos.Get(ctx, id)
			if err != nil || v.ID != id {
				t.Fatalf("openai-go reads %+v, %v", v, err)
			}
			page, err := oa.Videos.List(ctx, openai.VideoListParams{Limit: openai.Int(100)})
			if err != nil || !slices.ContainsFunc(page.Data, func(v openai.Video) bool { return v.ID == id }) {
				t.Fatalf("openai-go's list = %+v, %v; want it to hold %s", page, err, id)
			}
		})
	}
}

// cyclingUpstream is an Ark upstream whose one task's reads answer the scripted statuses in turn
// (each read the next one, from the first again after the last), as a provider whose replicas
// disagree does.
type cyclingUpstream struct {
	mu       sync.Mutex
	id       string
	statuses []string
	reads    int
}

func (c *cyclingUpstream) script(statuses ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statuses, c.reads = statuses, 0
}

func (c *cyclingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	const path = "/api/v3/contents/generations/tasks"
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == path:
		fmt.Fprintf(w, `{"id":%q}`, c.id)
	case r.Method == http.MethodGet && r.URL.Path == path+"/"+c.id:
		status := c.statuses[c.reads%len(c.statuses)]
		c.reads++
		content := `{}`
		if status == "succeeded" {
			content = `{"video_url":"https://cdn.example.com/v.mp4"}`
		}
		fmt.Fprintf(w, `{"id":%q,"model":"video-t","status":%q,"content":%s,"duration":5,"created_at":1700000000,"updated_at":1700000100}`, c.id, status, content)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"NotFound","message":"no such task"}}`)
	}
}

// TestTaskStatusGoesForwardOnly: an upstream whose reads of a task go back (queued after running;
// running or queued after succeeded, as replicas that disagree answer) never makes a client see
// the task go back: a queued answer over a recorded running one reads running (the Ark SDK and
// openai-go), and once the success is recorded every read, concurrent ones included, says
// succeeded. The task's hold is settled once and each status is called back once: running, then
// succeeded.
func TestTaskStatusGoesForwardOnly(t *testing.T) {
	up := &cyclingUpstream{id: "cgt-forward-1", statuses: []string{"running"}}
	srv := startFake(t, up)
	base, g := startSimGateway(t, typedAnswersCaddyfile, map[string]string{"up_url": srv.URL})
	tasks := base + "/api/v3/contents/generations/tasks"
	const key = "mg-typed"
	req, _ := http.NewRequest(http.MethodPost, "http://"+g.admin+"/mediagw/accounts/typed/credit", strings.NewReader(`{"amount":"10"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "typed-credit")
	if credit := do(t, req); credit.status != 200 {
		t.Fatalf("credit = %d %s", credit.status, credit.body)
	}
	ark := arkClient(base, key)
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	ctx := context.Background()

	r := call(t, "POST", tasks, key, fmt.Sprintf(`{"model":"video-t","content":[{"type":"text","text":"forward"}],"callback_url":%q}`, rc.URL+"/hooks"))
	id := r.field("id")
	if r.status != 200 || id != up.id {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	read := func(t *testing.T) string {
		t.Helper()
		time.Sleep(20 * time.Millisecond) // past refresh_interval: the read asks the upstream
		got, err := ark.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("the Ark SDK cannot read the task: %v", err)
		}
		return got.Status
	}
	if s := read(t); s != model.StatusRunning {
		t.Fatalf("status %q; want running", s)
	}
	up.script("queued")
	for range 3 {
		if s := read(t); s != model.StatusRunning {
			t.Fatalf("after the upstream said queued again the task reads %q; want running", s)
		}
	}
	if v, err := oa.Videos.Get(ctx, id); err != nil || v.Status != openai.VideoStatusInProgress || v.Progress != 50 {
		t.Fatalf("openai-go reads %+v, %v; want in_progress", v, err)
	}

	// Replicas that disagree: every read after the first success must say succeeded.
	up.script("succeeded", "running", "queued")
	var wg sync.WaitGroup
	statuses := make([][]string, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				got, err := ark.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id})
				if err != nil {
					statuses[i] = append(statuses[i], "error: "+err.Error())
					return
				}
				statuses[i] = append(statuses[i], got.Status)
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	for i, seq := range statuses {
		done := false
		for _, s := range seq {
			if s == model.StatusSucceeded {
				done = true
			} else if done || s != model.StatusRunning {
				t.Fatalf("poller %d read %v; want running until succeeded, then succeeded only", i, seq)
			}
		}
	}
	up.script("running", "queued")
	for range 3 {
		if s := read(t); s != model.StatusSucceeded {
			t.Fatalf("after the success the task reads %q; want succeeded", s)
		}
	}
	if v, err := oa.Videos.Get(ctx, id); err != nil || v.Status != openai.VideoStatusCompleted {
		t.Fatalf("openai-go reads %+v, %v; want completed", v, err)
	}

	waitFor(t, "the succeeded callback", func() bool {
		s := rc.seen()
		return len(s) > 0 && s[len(s)-1].status == model.StatusSucceeded
	})
	time.Sleep(300 * time.Millisecond) // a repeated callback would be queued by now
	var called []string
	for _, d := range rc.seen() {
		called = append(called, d.status)
	}
	if fmt.Sprint(called) != "[running succeeded]" {
		t.Fatalf("callbacks %v; want running, then succeeded, once each", called)
	}
	var ledger struct {
		Entries []map[string]any `json:"entries"`
	}
	decodeJSON(t, call(t, "GET", "http://"+g.admin+"/mediagw/accounts/typed/ledger", "", nil).body, &ledger)
	balance := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/typed/balance", "", nil)
	if balance.field("balance") != "9.95" || balance.field("held") != "0" {
		t.Fatalf("balance %s; want 10 less the 5 s at 0.01, nothing held (ledger %v)", balance.body, ledger.Entries)
	}
	t.Logf("ledger %v", ledger.Entries)
}
