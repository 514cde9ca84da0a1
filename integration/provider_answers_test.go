package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime"
	"github.com/volcengine/volcengine-go-sdk/service/arkruntime/model"
)

// providerAnswersCaddyfile serves both video fronts over a scripted upstream ({{up_url}}) that
// speaks Ark's task API (/api/v3) and Kling's (/kling/v1, JWT checked as Kling's reference says)
// and answers each task's read as the test scripts it. A task is read from the upstream at a
// client's poll (refresh_interval 10ms). The Ark key has none of the usual key prefixes, so only
// the gateway's knowledge of the exact credential can find it in an answer.
const providerAnswersCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark-answers {
			base_url {{up_url}}/api/v3
			api_key arkop7f3c9e1d5b2a4068
			models video-answers
		}
		provider kling-answers {
			base_url {{up_url}}/kling/v1
			access_key kling-answers-access
			secret_key kling-answers-secret
			protocol kling
			models kling-answers
		}
		price video-answers {
			second 0.01
		}
		callbacks {
			relay_base http://127.0.0.1:{{port}}
		}
		key mg-answers {
			account answers
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

// answerScript is a scripted answer to a task's read: its HTTP status and body, in which
// {{token}} becomes the credential the read carried and {{up}} the upstream's base URL.
type answerScript struct {
	status int
	body   string
}

// answersUpstream creates Ark tasks ("cgt-a<n>", from a create body with model and content, as
// Ark's reference requires) and Kling ones ("<n>", text2video, with model_name and prompt), and
// answers a task's read as scripted (a running task until then). Kling requests carry a JWT
// that fakeKling checks; a Kling result file (GET /kling/v1/files/...) is served only with a
// valid token in its token query parameter.
type answersUpstream struct {
	kling   fakeKling // its checkToken only
	mu      sync.Mutex
	n       int
	answers map[string]answerScript
	base    string
}

func (s *answersUpstream) set(id string, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[id] = answerScript{status, body}
}

func (s *answersUpstream) lastKling() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.n)
}

func (s *answersUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	const arkTasks, klingTasks, klingFiles = "/api/v3/contents/generations/tasks", "/kling/v1/videos/text2video", "/kling/v1/files/"
	p := r.URL.Path
	if strings.HasPrefix(p, "/kling/") {
		token := r.Header.Get("Authorization")
		if strings.HasPrefix(p, klingFiles) {
			token = "Bearer " + r.URL.Query().Get("token")
		}
		probe := r.Clone(r.Context())
		probe.Header.Set("Authorization", token)
		if code, message := s.kling.checkToken(probe); code != 0 {
			writeFakeJSON(w, http.StatusUnauthorized, map[string]any{"code": code, "message": message, "request_id": "r"})
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case r.Method == http.MethodPost && p == arkTasks:
		var c struct {
			Model   string            `json:"model"`
			Content []json.RawMessage `json:"content"`
		}
		if json.Unmarshal(body, &c) != nil || c.Model == "" || len(c.Content) == 0 {
			writeFakeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"code": "InvalidParameter", "message": "model and content are required"}})
			return
		}
		s.n++
		writeFakeJSON(w, http.StatusOK, map[string]string{"id": fmt.Sprintf("cgt-a%d", s.n)})
	case r.Method == http.MethodPost && p == klingTasks:
		var c klingText
		if err := decodeStrict(body, &c); err != nil || c.ModelName == "" || c.Prompt == "" {
			writeFakeJSON(w, http.StatusBadRequest, map[string]any{"code": 1201, "message": "invalid request parameters", "request_id": "r"})
			return
		}
		s.n++
		writeFakeJSON(w, http.StatusOK, map[string]any{"code": 0, "message": "SUCCEED", "request_id": "r",
			"data": map[string]any{"task_id": fmt.Sprint(s.n), "task_status": "submitted", "created_at": 1774805076166, "updated_at": 1774805076166}})
	case r.Method == http.MethodGet && strings.HasPrefix(p, klingFiles):
		w.Header().Set("Content-Type", "video/mp4")
		fmt.Fprint(w, "kling-video-bytes:"+strings.TrimPrefix(p, klingFiles))
	case r.Method == http.MethodGet && (strings.HasPrefix(p, arkTasks+"/") || strings.HasPrefix(p, klingTasks+"/")):
		kling := strings.HasPrefix(p, klingTasks+"/")
		id := p[strings.LastIndex(p, "/")+1:]
		a, ok := s.answers[id]
		switch {
		case !ok && kling:
			a = answerScript{200, `{"code":0,"message":"SUCCEED","request_id":"r","data":{"task_id":"` + id + `","task_status":"processing"}}`}
		case !ok:
			a = answerScript{200, `{"id":"` + id + `","model":"video-answers","status":"running","content":{}}`}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		fmt.Fprint(w, strings.NewReplacer("{{token}}", token, "{{up}}", s.base).Replace(a.body))
	default:
		writeFakeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]string{"code": "NotFound", "message": "no such resource"}})
	}
}

// answersGateway starts the gateway over a fresh answersUpstream.
type answersGateway struct {
	base string
	g    *gateway
	up   *answersUpstream
	ark  *arkruntime.Client
	oa   openai.Client
}

const answersKey = "mg-answers"

func startAnswersGateway(t *testing.T) *answersGateway {
	up := &answersUpstream{kling: fakeKling{accessKey: "kling-answers-access", secretKey: "kling-answers-secret"}, answers: map[string]answerScript{}}
	srv := startFake(t, up)
	up.base = srv.URL
	base, g := startSimGateway(t, providerAnswersCaddyfile, map[string]string{"up_url": srv.URL})
	return &answersGateway{base: base, g: g, up: up, ark: arkClient(base, answersKey),
		oa: openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(answersKey), option.WithMaxRetries(0))}
}

// create makes a task of the model and answers the gateway's id and the provider's.
func (a *answersGateway) create(t *testing.T, modelID string) (id, upstreamID string) {
	t.Helper()
	r := call(t, "POST", a.base+"/api/v3/contents/generations/tasks", answersKey, `{"model":"`+modelID+`","content":[{"type":"text","text":"an answer"}]}`)
	if r.status != 200 || r.field("id") == "" {
		t.Fatalf("create %s = %d %s", modelID, r.status, r.body)
	}
	a.up.mu.Lock()
	defer a.up.mu.Unlock()
	if modelID == "video-answers" {
		return r.field("id"), r.field("id")
	}
	return r.field("id"), fmt.Sprint(a.up.n)
}

func (a *answersGateway) poll(t *testing.T, id string) (model.GetContentGenerationTaskResponse, error) {
	t.Helper()
	return a.ark.GetContentGenerationTask(context.Background(), model.GetContentGenerationTaskRequest{ID: id})
}

// raw is the task API's answer about a task, as sent.
func (a *answersGateway) raw(t *testing.T, id string) response {
	t.Helper()
	return call(t, "GET", a.base+"/api/v3/contents/generations/tasks/"+id, answersKey, nil)
}

// TestProviderRefusesTheGatewaysTaskRead: a provider that answers the gateway's own read of a
// task (its GET with the operator's credential) with a 4xx other than 404 and 429 (Ark's 400,
// Kling's 400, Kling's 200 with an error code) refused the gateway, not the client: the client's
// poll is 502 invalid_response (spec §7.1) on both fronts (the Ark SDK, openai-go), and the task
// is neither lost nor failed: once the provider answers again, the task reads on and succeeds.
// Before the fix the client's poll got the provider's 400.
func TestProviderRefusesTheGatewaysTaskRead(t *testing.T) {
	a := startAnswersGateway(t)
	for _, tc := range []struct {
		name, model string
		status      int
		refusal     string
		success     string
	}{
		{"Ark 400", "video-answers", 400, `{"error":{"code":"InvalidParameter","message":"the parameter id is invalid","param":"id","type":"BadRequest"}}`,
			`{"id":"%[1]s","model":"video-answers","status":"succeeded","content":{"video_url":"https://cdn.example.com/%[1]s.mp4"}}`},
		{"Ark 403", "video-answers", 403, `{"error":{"code":"AccessDenied","message":"the request is not permitted","type":"Forbidden"}}`,
			`{"id":"%[1]s","model":"video-answers","status":"succeeded","content":{"video_url":"https://cdn.example.com/%[1]s.mp4"}}`},
		{"Kling 400", "kling-answers", 400, `{"code":1201,"message":"parameter invalid","request_id":"r"}`,
			`{"code":0,"message":"SUCCEED","request_id":"r","data":{"task_id":"%[1]s","task_status":"succeed","task_result":{"videos":[{"id":"v","url":"https://cdn.example.com/%[1]s.mp4","duration":"5"}]}}}`},
		{"Kling code in a 200", "kling-answers", 200, `{"code":1201,"message":"parameter invalid","request_id":"r"}`,
			`{"code":0,"message":"SUCCEED","request_id":"r","data":{"task_id":"%[1]s","task_status":"succeed","task_result":{"videos":[{"id":"v","url":"https://cdn.example.com/%[1]s.mp4","duration":"5"}]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, upID := a.create(t, tc.model)
			a.up.set(upID, tc.status, tc.refusal)
			_, err := a.poll(t, id)
			if httpStatus(err) != http.StatusBadGateway {
				t.Fatalf("the Ark SDK's poll: %v (HTTP %d); want 502", err, httpStatus(err))
			}
			if r := a.raw(t, id); r.status != http.StatusBadGateway || r.field("code") != "invalid_response" || r.field("message") == "" {
				t.Fatalf("the poll = %d %s; want 502 invalid_response", r.status, r.body)
			}
			_, err = a.oa.Videos.Get(context.Background(), id)
			var oaErr *openai.Error
			if !errorsAs(err, &oaErr) || oaErr.StatusCode != http.StatusBadGateway {
				t.Fatalf("openai-go's poll: %v; want 502", err)
			}
			a.up.set(upID, 200, fmt.Sprintf(tc.success, upID))
			got, err := a.poll(t, id)
			if err != nil || got.Status != model.StatusSucceeded || got.Content.VideoURL != "https://cdn.example.com/"+upID+".mp4" {
				t.Fatalf("after the provider answers again the Ark SDK reads %q %+v, %v; want succeeded", got.Status, got.Content, err)
			}
		})
	}
}
