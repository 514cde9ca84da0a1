package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// echoingAnswersCaddyfile serves both video fronts over one upstream ({{up_url}}) that speaks
// Ark's task API and Kling's in shape, and quotes the credential it was sent wherever the test
// puts {{token}} in a task's answer. A task is read from the upstream at a client's poll
// (refresh_interval 10ms).
const echoingAnswersCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark-echo {
			base_url {{up_url}}/api/v3
			api_key ark-operator-key-31337
			models video-echo
		}
		provider kling-echo {
			base_url {{up_url}}/kling/v1
			access_key kling-access-key
			secret_key kling-secret-key
			protocol kling
			models kling-echo
		}
		key mg-echo {
			account echo
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

// echoingUpstream creates Ark tasks ("cgt-e<n>") and Kling ones ("k<n>"), and answers a task's
// read with the body the test set for the task (running until then), {{token}} replaced by the
// credential the read carried.
type echoingUpstream struct {
	mu      sync.Mutex
	n       int
	answers map[string]string
}

func (s *echoingUpstream) set(id, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[id] = body
}

func (s *echoingUpstream) answer(id, token string, kling bool) string {
	b, ok := s.answers[id]
	if !ok && kling {
		b = `{"code":0,"message":"SUCCEED","data":{"task_id":"` + id + `","task_status":"processing"}}`
	} else if !ok {
		b = fmt.Sprintf(`{"id":%q,"model":"video-echo","status":"running","content":{}}`, id)
	}
	return strings.ReplaceAll(b, "{{token}}", token)
}

func (s *echoingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	const arkTasks, klingTasks = "/api/v3/contents/generations/tasks", "/kling/v1/videos/text2video"
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && p == arkTasks:
		s.n++
		fmt.Fprintf(w, `{"id":"cgt-e%d"}`, s.n)
	case r.Method == http.MethodPost && p == klingTasks:
		s.n++
		fmt.Fprintf(w, `{"code":0,"message":"SUCCEED","data":{"task_id":"k%d","task_status":"submitted"}}`, s.n)
	case r.Method == http.MethodGet && strings.HasPrefix(p, arkTasks+"/"):
		fmt.Fprint(w, s.answer(strings.TrimPrefix(p, arkTasks+"/"), token, false))
	case r.Method == http.MethodGet && strings.HasPrefix(p, klingTasks+"/"):
		fmt.Fprint(w, s.answer(strings.TrimPrefix(p, klingTasks+"/"), token, true))
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"code":"NotFound","message":"no such resource"}`)
	}
}

// TestTaskAnswersNeverQuoteTheCredential: a provider that quotes the credential the gateway sent
// it (the request's Authorization) in a task's answer (a failed task's message, a member of its
// own) must not hand it to the task's owner: the Ark key, the Kling token the gateway signed (valid
// for half an hour), and a credential-like token in a failed Ark task's message are replaced by
// [redacted] in what the task API (the Ark SDK), its task list and the /v1/videos front
// (openai-go) show; the answers keep their shape and everything else. (The watcher's batched
// reads: TestBatchedAnswersNeverQuoteTheCredential.) Before the fix, each of them reached
// the client as the provider wrote it (an Ark failed task's message was not redacted at all; an
// adaptor's was, of the API key and secret key only, never of the Kling token).
func TestTaskAnswersNeverQuoteTheCredential(t *testing.T) {
	up := &echoingUpstream{answers: map[string]string{}}
	srv := startFake(t, up)
	base, _ := startSimGateway(t, echoingAnswersCaddyfile, map[string]string{"up_url": srv.URL})
	const key = "mg-echo"
	ctx := context.Background()

	create := func(site, modelID string) string {
		t.Helper()
		r := call(t, "POST", site+"/api/v3/contents/generations/tasks", key, `{"model":"`+modelID+`","content":[{"type":"text","text":"an echo"}]}`)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create %s = %d %s", modelID, r.status, r.body)
		}
		return r.field("id")
	}
	// requireClean reads the task through every client and requires the provider's text to be
	// there, redacted, and no credential anywhere.
	requireClean := func(t *testing.T, site, id, wantStatus, wantMessage string) {
		t.Helper()
		raw := call(t, "GET", site+"/api/v3/contents/generations/tasks/"+id, key, nil)
		list := call(t, "GET", site+"/api/v3/contents/generations/tasks?filter.task_ids="+id, key, nil)
		front := call(t, "GET", site+"/v1/videos/"+id, key, nil)
		for i, r := range []response{raw, list, front} {
			body := string(r.body)
			// The video object carries no member of the provider's own, so no [redacted] either.
			redacted := strings.Contains(body, "[redacted]") || i == 2 && wantMessage == ""
			if r.status != 200 || strings.Contains(body, "ark-operator-key-31337") || strings.Contains(body, "eyJ") ||
				strings.Contains(body, "sk-live-4242") || !redacted {
				t.Fatalf("%s: answer %d %s; want the provider's text with its credentials [redacted]", id, r.status, body)
			}
		}
		got, err := arkClient(site, key).GetContentGenerationTask(ctx, model.GetContentGenerationTaskRequest{ID: id})
		if err != nil || got.Status != wantStatus {
			t.Fatalf("%s: the Ark SDK reads %q, err %v; want %s", id, got.Status, err, wantStatus)
		}
		if wantMessage != "" && (got.Error == nil || got.Error.Message != wantMessage) {
			t.Fatalf("%s: the Ark SDK reads the error %+v; want the message %q", id, got.Error, wantMessage)
		}
		oa := openai.NewClient(option.WithBaseURL(site+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
		v, err := oa.Videos.Get(ctx, id)
		if err != nil {
			t.Fatalf("%s: openai-go cannot read the video: %v", id, err)
		}
		if wantMessage != "" && (v.Status != openai.VideoStatusFailed || v.Error.Message != wantMessage) {
			t.Fatalf("%s: openai-go reads %q with the error %+v; want failed, %q", id, v.Status, v.Error, wantMessage)
		}
	}

	failed := create(base, "video-echo")
	up.set(failed, `{"id":"`+failed+`","model":"video-echo","status":"failed",`+
		`"error":{"code":"AuthenticationError","message":"key {{token}} is not allowed; try sk-live-4242abcd"}}`)
	requireClean(t, base, failed, model.StatusFailed, "key [redacted] is not allowed; try [redacted]")

	running := create(base, "video-echo")
	up.set(running, `{"id":"`+running+`","model":"video-echo","status":"running","debug":{"authorization":"Bearer {{token}}","region":"x"}}`)
	requireClean(t, base, running, model.StatusRunning, "")
	if r := call(t, "GET", base+"/api/v3/contents/generations/tasks/"+running, key, nil); !strings.Contains(string(r.body), `"region":"x"`) {
		t.Fatalf("the answer lost the provider's other members: %s", r.body)
	}

	kling := create(base, "kling-echo")
	up.mu.Lock()
	kid := fmt.Sprintf("k%d", up.n)
	up.mu.Unlock()
	up.set(kid, `{"code":0,"message":"SUCCEED","data":{"task_id":"`+kid+`","task_status":"failed","task_status_msg":"token {{token}} expired"}}`)
	requireClean(t, base, kling, model.StatusFailed, "token [redacted] expired")
}
