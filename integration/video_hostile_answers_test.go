package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// hostileAnswersCaddyfile serves both video fronts over a misbehaving upstream ({{up_url}}) that
// speaks Ark's task API (/api/v3) and DashScope's (/api/v1) in shape but answers task reads as
// the test scripts them.
const hostileAnswersCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark-hostile {
			base_url {{up_url}}/api/v3
			api_key hostile-up-key
			models video-h
		}
		provider wan-hostile {
			base_url {{up_url}}/api/v1
			api_key hostile-up-key
			protocol dashscope
			models wan-h
		}
		key mg-hostile-answers {
			account hostile-answers
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

// scriptedUpstream creates tasks as Ark (id "cgt-h<n>") and DashScope ("ds-<n>") do, and answers
// a task's read with the body the test set for it (a queued or PENDING task until then).
type scriptedUpstream struct {
	mu      sync.Mutex
	n       int
	answers map[string]string
}

func (s *scriptedUpstream) set(id, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[id] = body
}

// startScripted starts a scriptedUpstream and a gateway of caddyfile in front of it ({{up_url}}),
// and returns the upstream and the gateway's base URL.
func startScripted(t *testing.T, caddyfile string) (*scriptedUpstream, string) {
	t.Helper()
	up := &scriptedUpstream{answers: map[string]string{}}
	srv := startFake(t, up)
	base, _ := startSimGateway(t, caddyfile, map[string]string{"up_url": srv.URL})
	return up, base
}

// last is the id of the latest DashScope task.
func (s *scriptedUpstream) lastDash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("ds-%d", s.n)
}

func (s *scriptedUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	const arkTasks, dashTasks = "/api/v3/contents/generations/tasks", "/api/v1/tasks/"
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && p == arkTasks:
		s.n++
		fmt.Fprintf(w, `{"id":"cgt-h%d"}`, s.n)
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/api/v1/services/aigc/"):
		s.n++
		fmt.Fprintf(w, `{"request_id":"r","output":{"task_id":"ds-%d","task_status":"PENDING"}}`, s.n)
	case r.Method == http.MethodGet && strings.HasPrefix(p, arkTasks+"/"):
		id := strings.TrimPrefix(p, arkTasks+"/")
		b, ok := s.answers[id]
		if !ok {
			b = fmt.Sprintf(`{"id":%q,"model":"video-h","status":"queued","content":{}}`, id)
		}
		fmt.Fprint(w, b)
	case r.Method == http.MethodGet && strings.HasPrefix(p, dashTasks):
		id := strings.TrimPrefix(p, dashTasks)
		b, ok := s.answers[id]
		if !ok {
			b = fmt.Sprintf(`{"request_id":"r","output":{"task_id":%q,"task_status":"PENDING"}}`, id)
		}
		fmt.Fprint(w, b)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"code":"NotFound","message":"no such resource"}`)
	}
}

// TestHostileSucceededAnswers: an upstream that reports a task succeeded without a video address
// (Ark's content without video_url, or with a number there; DashScope's SUCCEEDED without
// output.video_url), or whose answer carries a member that a case-blind decoder reads as the
// status ("ſtatus" folds to "status" in encoding/json, the Ark Go SDK's decoder), must not make
// a client see a success the gateway did not record, or a success without a result: the task
// reads running on both fronts (the Ark SDK and openai-go decode it), its content is
// 409 video_not_completed, and it succeeds once the upstream sends a result. Before the fix the
// Ark SDK read "succeeded" (with an empty or undecodable content), /v1/videos said completed,
// and its content answered 500.
func TestHostileSucceededAnswers(t *testing.T) {
	up, base := startScripted(t, hostileAnswersCaddyfile)
	tasks := base + "/api/v3/contents/generations/tasks"
	const key = "mg-hostile-answers"
	ark := arkClient(base, key)
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()

	create := func(modelID string) string {
		t.Helper()
		r := call(t, "POST", tasks, key, `{"model":"`+modelID+`","content":[{"type":"text","text":"a hostile answer"}]}`)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		return r.field("id")
	}
	// requireRunning reads the task as each client does and requires that none sees it finished.
	requireRunning := func(t *testing.T, id string) {
		t.Helper()
		time.Sleep(30 * time.Millisecond) // past refresh_interval: each read asks the upstream
		got, err := ark.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id})
		if err != nil || got.Status != model.StatusRunning {
			t.Fatalf("Ark SDK reads status %q (content %+v), err %v; want running", got.Status, got.Content, err)
		}
		raw := call(t, "GET", tasks+"/"+id, key, nil)
		if m := raw.json(t); m["status"] != "running" || fmt.Sprint(m["content"]) != "map[]" {
			t.Fatalf("task answer %s; want running with content {}", raw.body)
		}
		if strings.Contains(string(raw.body), "ſ") {
			t.Fatalf("the answer carries the upstream's case-variant member: %s", raw.body)
		}
		v, err := oa.Videos.Get(ctx, id)
		if err != nil || v.Status != openai.VideoStatusInProgress {
			t.Fatalf("openai-go reads %+v, err %v; want in_progress", v, err)
		}
		r := sendAsIs(t, "GET", base+"/v1/videos/"+id+"/content", key)
		if r.status != http.StatusConflict || !strings.Contains(string(r.body), "video_not_completed") {
			t.Fatalf("content = %d %s; want 409 video_not_completed", r.status, r.body)
		}
	}

	for _, tc := range []struct{ name, answer string }{
		{"succeeded without content", `{"id":"%[1]s","model":"video-h","status":"succeeded"}`},
		{"succeeded with empty content", `{"id":"%[1]s","model":"video-h","status":"succeeded","content":{}}`},
		{"succeeded with an empty video_url", `{"id":"%[1]s","model":"video-h","status":"succeeded","content":{"video_url":""}}`},
		{"succeeded with a number for video_url", `{"id":"%[1]s","model":"video-h","status":"succeeded","content":{"video_url":5}}`},
		{"succeeded with a case-variant video_url after it", `{"id":"%[1]s","model":"video-h","status":"succeeded","content":{"video_url":"https://cdn.example.com/v.mp4","VIDEO_URL":""}}`},
		{"a case-folded status beside running", `{"id":"%[1]s","model":"video-h","status":"running","ſtatus":"succeeded"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := create("video-h")
			up.set(id, fmt.Sprintf(tc.answer, id))
			requireRunning(t, id)
			// A proper success afterwards is one.
			up.set(id, fmt.Sprintf(`{"id":%q,"model":"video-h","status":"succeeded","content":{"video_url":"https://cdn.example.com/%s.mp4"}}`, id, id))
			time.Sleep(30 * time.Millisecond)
			got, err := ark.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id})
			if err != nil || got.Status != model.StatusSucceeded || got.Content.VideoURL != "https://cdn.example.com/"+id+".mp4" {
				t.Fatalf("after a proper success the Ark SDK reads %q %+v, err %v", got.Status, got.Content, err)
			}
		})
	}

	t.Run("DashScope SUCCEEDED without video_url", func(t *testing.T) {
		id := create("wan-h")
		up.set(up.lastDash(), `{"request_id":"r","output":{"task_id":"`+up.lastDash()+`","task_status":"SUCCEEDED"},"usage":{"video_duration":5,"video_ratio":"1280*720"}}`)
		requireRunning(t, id)
	})
}

// TestVideosFrontInputReferenceMembers: an input_reference object carries image_url (or the
// refused file_id) and nothing else, as its form parts input_reference[<name>] do; a member the
// front would drop without a word (it builds the task from image_url alone) is 400 naming it,
// as any other unknown field of the create is. Before the fix it was taken silently, a
// private address in it included.
func TestVideosFrontInputReferenceMembers(t *testing.T) {
	_, base := startScripted(t, hostileAnswersCaddyfile)
	const key = "mg-hostile-answers"
	for _, tc := range []struct {
		name, ref string
		status    int
		param     string
	}{
		{"image_url only", `{"image_url":"https://cdn.example.com/a.png"}`, 200, ""},
		{"a URL string", `"https://cdn.example.com/a.png"`, 200, ""},
		{"an unknown member", `{"image_url":"https://cdn.example.com/a.png","detail":"high"}`, 400, "input_reference.detail"},
		{"an unknown member with a private URL", `{"image_url":"https://cdn.example.com/a.png","fallback":"http://127.0.0.1/a.png"}`, 400, "input_reference.fallback"},
		{"file_id", `{"file_id":"file-1"}`, 400, "input_reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, "POST", base+"/v1/videos", key, `{"model":"video-h","prompt":"a cat","input_reference":`+tc.ref+`}`)
			if r.status != tc.status {
				t.Fatalf("create = %d %s; want %d", r.status, r.body, tc.status)
			}
			if tc.status == 200 {
				return
			}
			var e struct {
				Error struct{ Type, Param, Message string }
			}
			decodeJSON(t, r.body, &e)
			if e.Error.Type != "invalid_request_error" || e.Error.Param != tc.param || e.Error.Message == "" {
				t.Fatalf("error %s; want invalid_request_error naming %s", r.body, tc.param)
			}
		})
	}
}

// TestVideosFrontContentOfAnUnusableResult: a provider that reports a task succeeded but names
// its result with something that is no absolute http(s) URL (a file: or javascript: URL, a
// relative or scheme-relative path, a URL without a host or with user information, a broken
// URL) has named no result: the task reads running on both fronts (the Ark SDK and openai-go
// decode it), its content is 409 video_not_completed, never a redirect, and it succeeds once the
// upstream names a result. A last frame that is no address is left out of a success: the
// thumbnail is 404 not_found, the video a redirect. Before the fix the task read succeeded and
// completed, and its content answered 502 (or was sent to the address). An address on a private
// host is a client's to follow: the gateway redirects to it and never connects to it itself.
func TestVideosFrontContentOfAnUnusableResult(t *testing.T) {
	var internalHits atomic.Int64
	internal := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { internalHits.Add(1) }))
	up, base := startScripted(t, hostileAnswersCaddyfile)
	const key = "mg-hostile-answers"
	ark := arkClient(base, key)
	ctx := context.Background()
	create := func(t *testing.T) string {
		t.Helper()
		r := call(t, "POST", base+"/v1/videos", key, `{"model":"video-h","prompt":"a cat"}`)
		id := r.field("id")
		if r.status != 200 || id == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		return id
	}
	content := func(t *testing.T, id, variant string) response {
		t.Helper()
		return sendAsIs(t, "GET", base+"/v1/videos/"+id+"/content"+variant, key)
	}
	for _, result := range []string{"file:///etc/passwd", "javascript:alert(1)", "ftp://cdn.example.com/v.mp4", "/relative/v.mp4",
		"//cdn.example.com/v.mp4", "https://", "http://:80/v.mp4", "http://[::1", "https://user:pw@cdn.example.com/v.mp4", "cdn.example.com/v.mp4"} {
		t.Run(result, func(t *testing.T) {
			id := create(t)
			up.set(id, fmt.Sprintf(`{"id":%q,"status":"succeeded","content":{"video_url":%q,"last_frame_url":%q}}`, id, result, result))
			time.Sleep(30 * time.Millisecond) // past refresh_interval
			got, err := ark.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id})
			if err != nil || got.Status != model.StatusRunning || got.Content.VideoURL != "" {
				t.Fatalf("the Ark SDK reads %q %+v, %v; want running without a result", got.Status, got.Content, err)
			}
			if s := call(t, "GET", base+"/v1/videos/"+id, key, nil).field("status"); s != "in_progress" {
				t.Fatalf("video status %q, want in_progress", s)
			}
			for _, variant := range []string{"", "?variant=thumbnail"} {
				c := content(t, id, variant)
				if c.status != http.StatusConflict || !strings.Contains(string(c.body), "video_not_completed") || c.header.Get("Location") != "" {
					t.Fatalf("content%s = %d %s (Location %q); want 409 video_not_completed", variant, c.status, c.body, c.header.Get("Location"))
				}
			}
			// A result named afterwards is one; the last frame that is no address is left out.
			video := "https://cdn.example.com/" + id + ".mp4"
			up.set(id, fmt.Sprintf(`{"id":%q,"status":"succeeded","content":{"video_url":%q,"last_frame_url":%q}}`, id, video, result))
			time.Sleep(30 * time.Millisecond)
			got, err = ark.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id})
			if err != nil || got.Status != model.StatusSucceeded || got.Content.VideoURL != video || got.Content.LastFrameURL != "" {
				t.Fatalf("the Ark SDK reads %q %+v, %v; want succeeded with the video and no last frame", got.Status, got.Content, err)
			}
			if c := content(t, id, ""); c.status != http.StatusFound || c.header.Get("Location") != video {
				t.Fatalf("content = %d (Location %q); want a redirect to the video", c.status, c.header.Get("Location"))
			}
			if c := content(t, id, "?variant=thumbnail"); c.status != http.StatusNotFound || c.header.Get("Location") != "" {
				t.Fatalf("thumbnail = %d %s; want 404", c.status, c.body)
			}
		})
	}
	t.Run("a private address", func(t *testing.T) {
		id := create(t)
		video := internal.URL + "/v.mp4"
		up.set(id, fmt.Sprintf(`{"id":%q,"status":"succeeded","content":{"video_url":%q}}`, id, video))
		time.Sleep(30 * time.Millisecond)
		if got, err := ark.GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id}); err != nil || got.Content.VideoURL != video {
			t.Fatalf("the Ark SDK reads %+v, %v", got, err)
		}
		if c := content(t, id, ""); c.status != http.StatusFound || c.header.Get("Location") != video {
			t.Fatalf("content = %d (Location %q); want a redirect for the client to follow", c.status, c.header.Get("Location"))
		}
		if n := internalHits.Load(); n != 0 {
			t.Fatalf("the gateway connected to the private result address %d times", n)
		}
	})
}

// TestHostileAnswerTypes: the members of a task's answer that the contract types (spec §2.5:
// error.code a string, created_at and updated_at integers, resolution and ratio strings, duration
// an integer) reach the client so typed, whatever the upstream wrote: a timestamp written with an
// exponent is the integer written plainly, a member of another type is left out (a code that is
// not a string; a duration, resolution or ratio that is not known as the contract types it).
// Before the fix the upstream's values went through as they were, and the Ark Go SDK failed to
// decode the answer (error.code 500, updated_at 1.5e3).
func TestHostileAnswerTypes(t *testing.T) {
	up, base := startScripted(t, hostileAnswersCaddyfile)
	tasks := base + "/api/v3/contents/generations/tasks"
	const key = "mg-hostile-answers"
	ark := arkClient(base, key)
	for _, tc := range []struct {
		name, answer string
		want         map[string]any // members of the answer; nil: absent
	}{
		{"a numeric error code", `{"status":"failed","error":{"code":500,"message":"boom"}}`,
			map[string]any{"status": "failed", "error": map[string]any{"message": "boom"}}},
		{"a string error code", `{"status":"failed","error":{"code":"E1","message":"boom"}}`,
			map[string]any{"error": map[string]any{"code": "E1", "message": "boom"}}},
		{"timestamps with an exponent", `{"status":"running","created_at":1.7e9,"updated_at":1.5e3}`,
			map[string]any{"created_at": 1.7e9, "updated_at": 1500.0}},
		{"a duration with a fraction", `{"status":"running","duration":5.5}`, map[string]any{"duration": nil}},
		{"a duration as a string", `{"status":"running","duration":"5s"}`, map[string]any{"duration": nil}},
		{"a whole duration", `{"status":"running","duration":5.0}`, map[string]any{"duration": 5.0}},
		{"a numeric resolution", `{"status":"running","resolution":720,"ratio":"16:9"}`, map[string]any{"resolution": nil, "ratio": "16:9"}},
		{"an object ratio", `{"status":"running","ratio":{"w":16}}`, map[string]any{"ratio": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, "POST", tasks, key, `{"model":"video-h","content":[{"type":"text","text":"typed"}]}`)
			id := r.field("id")
			if r.status != 200 || id == "" {
				t.Fatalf("create = %d %s", r.status, r.body)
			}
			up.set(id, strings.Replace(tc.answer, "{", fmt.Sprintf(`{"id":%q,`, id), 1))
			time.Sleep(30 * time.Millisecond) // past refresh_interval
			if _, err := ark.GetContentGenerationTask(context.Background(), model.GetContentGenerationTaskRequest{ID: id}); err != nil {
				t.Fatalf("the Ark SDK cannot read the answer: %v", err)
			}
			got := call(t, "GET", tasks+"/"+id, key, nil).json(t)
			for k, want := range tc.want {
				v, has := got[k]
				if want == nil && has || want != nil && fmt.Sprint(v) != fmt.Sprint(want) {
					t.Fatalf("%s = %v (present %v), want %v; answer %v", k, v, has, want, got)
				}
			}
		})
	}
}
