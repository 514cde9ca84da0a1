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
	"time"
	"unicode/utf8"

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
			max_seconds 30
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
// {{token}} becomes the credential the read carried ({{token%}} the same with its first
// character percent-encoded) and {{up}} the upstream's base URL.
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
	case r.Method == http.MethodGet && strings.HasPrefix(p, klingFiles+"echo"):
		// A hostile file server: it echoes the token it was sent in its headers, and calls the
		// file a page.
		echoed := r.URL.Query().Get("token")
		w.Header().Set("Content-Type", "text/html; charset="+echoed)
		w.Header().Set("Etag", `"`+echoed+`"`)
		w.Header().Set("Last-Modified", echoed)
		fmt.Fprint(w, "<script>kling-video-bytes</script>")
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
		// {{token%}} is the token with its first character percent-encoded.
		encoded := ""
		if token != "" {
			encoded = fmt.Sprintf("%%%02X", token[0]) + token[1:]
		}
		fmt.Fprint(w, strings.NewReplacer("{{token}}", token, "{{token%}}", encoded, "{{up}}", s.base).Replace(a.body))
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
	// A 429 pauses the upstream for its Retry-After; the poll that met it gets the stored answer
	// (running), as every poll during the pause does, not a 429 of its own.
	t.Run("Ark 429", func(t *testing.T) {
		id, _ := a.create(t, "video-answers")
		if got, err := a.poll(t, id); err != nil || got.Status != model.StatusRunning {
			t.Fatalf("the Ark SDK reads %q, %v; want running", got.Status, err)
		}
		a.up.set(id, http.StatusTooManyRequests, `{"error":{"code":"RateLimitExceeded","message":"too many requests","type":"TooManyRequests"}}`)
		time.Sleep(20 * time.Millisecond) // past refresh_interval: the poll reads the upstream
		if got, err := a.poll(t, id); err != nil || got.Status != model.StatusRunning {
			t.Fatalf("the poll that met the 429: the Ark SDK reads %q, %v (HTTP %d); want the stored answer, running", got.Status, err, httpStatus(err))
		}
	})
}

// klingAnswer is a Kling task read's answer with data's members as given.
func klingAnswer(id, data string) string {
	return `{"code":0,"message":"SUCCEED","request_id":"r","data":{"task_id":"` + id + `",` + data + `}}`
}

// TestFailedTaskMessageIsBounded: a failed task's message of several MiB (Ark's error.message,
// Kling's task_status_msg; two-byte characters) is cut before it is stored, at most
// MaxFailureMessage (4096) bytes on a UTF-8 boundary, in every answer: the Ark SDK's, the task
// list's failure_reason and openai-go's error. Before the fix the whole message was stored and
// served.
func TestFailedTaskMessageIsBounded(t *testing.T) {
	a := startAnswersGateway(t)
	long := "x" + strings.Repeat("é", 1536<<10) // 3 MiB, each é two bytes after an odd start
	for _, tc := range []struct{ model, answer string }{
		{"video-answers", `{"id":"%[1]s","model":"video-answers","status":"failed","error":{"code":"InternalError","message":%[2]q}}`},
		{"kling-answers", klingAnswer("%[1]s", `"task_status":"failed","task_status_msg":%[2]q`)},
	} {
		t.Run(tc.model, func(t *testing.T) {
			id, upID := a.create(t, tc.model)
			a.up.set(upID, 200, fmt.Sprintf(tc.answer, upID, long))
			got, err := a.poll(t, id)
			if err != nil || got.Status != model.StatusFailed || got.Error == nil {
				t.Fatalf("the Ark SDK reads %q %+v, %v; want failed", got.Status, got.Error, err)
			}
			requireCut := func(where, m string) {
				t.Helper()
				if len(m) == 0 || len(m) > 4096 || !utf8.ValidString(m) || !strings.HasPrefix(long, strings.TrimSuffix(m, "…")) {
					t.Fatalf("%s: message of %d bytes (valid UTF-8 %v); want a prefix of the provider's of at most 4096 bytes", where, len(m), utf8.ValidString(m))
				}
			}
			requireCut("Ark SDK", got.Error.Message)
			list := call(t, "GET", a.base+"/api/v3/contents/generations/tasks?filter.task_ids="+id, answersKey, nil)
			if len(list.body) > 16<<10 {
				t.Fatalf("the task list is %d bytes", len(list.body))
			}
			v, err := a.oa.Videos.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			requireCut("openai-go", v.Error.Message)
		})
	}
}

// TestAdaptorAnswerFieldTypes: a Kling answer with a member of a wrong type that the adaptor
// does not need (a number for the top-level message, a number for a video's duration, which
// the reference gives as a string) is read as any other: the task succeeds. A wrong type in a
// member it needs (a number for task_status) is a 502 invalid_response naming the member,
// while the task stays as it was, and it reads on once the provider answers properly. Before
// the fix both made every read 502 (the whole answer was refused).
func TestAdaptorAnswerFieldTypes(t *testing.T) {
	a := startAnswersGateway(t)
	id, upID := a.create(t, "kling-answers")
	a.up.set(upID, 200, `{"code":0,"message":5,"request_id":"r","data":{"task_id":"`+upID+`","task_status":"succeed","created_at":"yesterday",`+
		`"task_result":{"videos":[{"id":7,"url":"https://cdn.example.com/k.mp4","duration":5}]}}}`)
	got, err := a.poll(t, id)
	if err != nil || got.Status != model.StatusSucceeded || got.Content.VideoURL != "https://cdn.example.com/k.mp4" {
		t.Fatalf("the Ark SDK reads %q %+v, %v; want succeeded", got.Status, got.Content, err)
	}
	if d := a.raw(t, id).json(t)["duration"]; d != 5.0 {
		t.Fatalf("duration %v; want 5", d)
	}

	id, upID = a.create(t, "kling-answers")
	a.up.set(upID, 200, klingAnswer(upID, `"task_status":7`))
	r := a.raw(t, id)
	if r.status != http.StatusBadGateway || r.field("code") != "invalid_response" || !strings.Contains(r.field("message"), "data.task_status") {
		t.Fatalf("poll = %d %s; want 502 invalid_response naming data.task_status", r.status, r.body)
	}
	a.up.set(upID, 200, klingAnswer(upID, `"task_status":"processing"`))
	if got, err := a.poll(t, id); err != nil || got.Status != model.StatusRunning {
		t.Fatalf("the Ark SDK reads %q, %v; want running", got.Status, err)
	}
}

// TestEscapedCredentialInAnswers: an Ark provider's answer that quotes the operator's key with
// JSON escapes (\u0061 for its first letter, an escape in its middle, \/ spelling nothing) in a
// member of its own or in a failed task's message is redacted as the plain key is: no client
// decodes the key out of any answer (the raw answer decoded, the Ark SDK, the list). Before the
// fix only the key byte for byte was found, and the escaped one reached the client.
func TestEscapedCredentialInAnswers(t *testing.T) {
	a := startAnswersGateway(t)
	const key = "arkop7f3c9e1d5b2a4068"
	for _, spelled := range []string{`\u0061rkop7f3c9e1d5b2a4068`, `arkop7f3c9e1d5b2a40\u00368`, `\u0061\u0072\u006b\u006f\u00707f3c9e1d5b2a4068`} {
		t.Run(spelled, func(t *testing.T) {
			id, _ := a.create(t, "video-answers")
			a.up.set(id, 200, `{"id":"`+id+`","model":"video-answers","status":"running","debug":{"auth":"Bearer `+spelled+`","path":"a\/b"}}`)
			r := a.raw(t, id)
			var decoded any
			decodeJSON(t, r.body, &decoded)
			if r.status != 200 || strings.Contains(fmt.Sprint(decoded), key) {
				t.Fatalf("running answer %d decodes to %v; want the key redacted", r.status, decoded)
			}
			failed, _ := a.create(t, "video-answers")
			a.up.set(failed, 200, `{"id":"`+failed+`","model":"video-answers","status":"failed","error":{"code":"AuthenticationError","message":"key `+spelled+` is not allowed"}}`)
			got, err := a.poll(t, failed)
			if err != nil || got.Error == nil || got.Error.Message != "key [redacted] is not allowed" {
				t.Fatalf("the Ark SDK reads %+v, %v; want the key redacted", got.Error, err)
			}
			list := call(t, "GET", a.base+"/api/v3/contents/generations/tasks?filter.task_ids="+failed+"&filter.task_ids="+id, answersKey, nil)
			decodeJSON(t, list.body, &decoded)
			if strings.Contains(fmt.Sprint(decoded), key) {
				t.Fatalf("the list decodes to %v; want the key redacted", decoded)
			}
		})
	}
}

// TestCredentialInResultURL: a Kling result URL that carries the operator's credential (the
// JWT the gateway signed, as a query parameter) is never shown: the client's video_url is the
// task's owner-only content endpoint, which streams the video that the gateway fetches with the
// URL. Before the fix the client got the URL with the token. An Ark provider's answers pass
// through: its result URL with the key keeps its place, the key [redacted] (docs/api.md).
func TestCredentialInResultURL(t *testing.T) {
	a := startAnswersGateway(t)
	id, upID := a.create(t, "kling-answers")
	a.up.set(upID, 200, klingAnswer(upID, `"task_status":"succeed","task_result":{"videos":[{"id":"v","url":"{{up}}/kling/v1/files/`+upID+`.mp4?token={{token}}","duration":"5"}]}`))
	got, err := a.poll(t, id)
	want := a.base + "/api/v3/contents/generations/tasks/" + id + "/content"
	if err != nil || got.Status != model.StatusSucceeded || got.Content.VideoURL != want {
		t.Fatalf("the Ark SDK reads %q %+v, %v; want succeeded with video_url %s", got.Status, got.Content, err, want)
	}
	for _, r := range []response{a.raw(t, id), call(t, "GET", a.base+"/v1/videos/"+id, answersKey, nil)} {
		if strings.Contains(string(r.body), "eyJ") || strings.Contains(string(r.body), "token=") {
			t.Fatalf("an answer shows the credential: %s", r.body)
		}
	}
	c := sendAsIs(t, "GET", want, answersKey)
	if c.status != 200 || string(c.body) != "kling-video-bytes:"+upID+".mp4" {
		t.Fatalf("content = %d %q; want the video", c.status, c.body)
	}
	if other := sendAsIs(t, "GET", want, "mg-nobody"); other.status == 200 {
		t.Fatalf("content without the owner's key = %d", other.status)
	}

	// The token percent-encoded in a URL that a strict decoder refuses (a stray %zz) is the
	// token still: a client's lenient decoder reads it.
	stray, strayID := a.create(t, "kling-answers")
	a.up.set(strayID, 200, klingAnswer(strayID, `"task_status":"succeed","task_result":{"videos":[{"id":"v","url":"{{up}}/kling/v1/files/`+strayID+`.mp4?token={{token%}}&x=%zz","duration":"5"}]}`))
	if got, err := a.poll(t, stray); err != nil || got.Content.VideoURL != a.base+"/api/v3/contents/generations/tasks/"+stray+"/content" {
		t.Fatalf("the Ark SDK reads %+v, %v; want the content endpoint", got.Content, err)
	}

	// The content answer carries none of the provider's headers that echo the credential, and
	// no type a browser would run on the gateway's origin.
	echo, echoID := a.create(t, "kling-answers")
	a.up.set(echoID, 200, klingAnswer(echoID, `"task_status":"succeed","task_result":{"videos":[{"id":"v","url":"{{up}}/kling/v1/files/echo`+echoID+`.mp4?token={{token}}","duration":"5"}]}`))
	if got, err := a.poll(t, echo); err != nil || got.Status != model.StatusSucceeded {
		t.Fatalf("the Ark SDK reads %q, %v; want succeeded", got.Status, err)
	}
	for _, path := range []string{"/api/v3/contents/generations/tasks/" + echo + "/content", "/v1/videos/" + echo + "/content"} {
		c := sendAsIs(t, "GET", a.base+path, answersKey)
		if c.status != 200 || string(c.body) != "<script>kling-video-bytes</script>" {
			t.Fatalf("%s = %d %q; want the file", path, c.status, c.body)
		}
		if strings.Contains(fmt.Sprint(c.header), "eyJ") || c.header.Get("Content-Type") != "application/octet-stream" || c.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s answers the headers %v; want no token, application/octet-stream, nosniff", path, c.header)
		}
	}

	ark, _ := a.create(t, "video-answers")
	a.up.set(ark, 200, `{"id":"`+ark+`","model":"video-answers","status":"succeeded","content":{"video_url":"https://cdn.example.com/a.mp4?api_key={{token}}"}}`)
	got, err = a.poll(t, ark)
	if err != nil || got.Status != model.StatusSucceeded || got.Content.VideoURL != "https://cdn.example.com/a.mp4?api_key=[redacted]" {
		t.Fatalf("the Ark SDK reads %q %+v, %v; want the Ark result with its key [redacted]", got.Status, got.Content, err)
	}
	// The key percent-encoded (as a URL may spell any character of it, %61 for a), in the
	// result URL and in a failure's message, is the key: a client's URL decoder reads it.
	encoded, _ := a.create(t, "video-answers")
	a.up.set(encoded, 200, `{"id":"`+encoded+`","model":"video-answers","status":"succeeded","content":{"video_url":"https://cdn.example.com/a.mp4?api_key=%61rkop7f3c9e1d5b2a40%368&x=1"}}`)
	got, err = a.poll(t, encoded)
	if err != nil || got.Status != model.StatusSucceeded || got.Content.VideoURL != "https://cdn.example.com/a.mp4?api_key=[redacted]&x=1" {
		t.Fatalf("the Ark SDK reads %q %+v, %v; want the percent-encoded key [redacted]", got.Status, got.Content, err)
	}
	failed, _ := a.create(t, "video-answers")
	a.up.set(failed, 200, `{"id":"`+failed+`","model":"video-answers","status":"failed","error":{"code":"Unauthorized","message":"GET /v?key=arkop7f3c9e1d5b2a%34%30%36%38 refused"}}`)
	got, err = a.poll(t, failed)
	if err != nil || got.Error == nil || got.Error.Message != "GET /v?key=[redacted] refused" {
		t.Fatalf("the Ark SDK reads %+v, %v; want the percent-encoded key [redacted]", got.Error, err)
	}
	kling, klingUp := a.create(t, "kling-answers")
	a.up.set(klingUp, 200, klingAnswer(klingUp, `"task_status":"failed","task_status_msg":"file {{up}}/f?token={{token%}} refused"`))
	if r := a.raw(t, kling); !strings.Contains(string(r.body), "token=[redacted] refused") {
		t.Fatalf("a Kling failure with its token percent-encoded answers %s; want it [redacted]", r.body)
	}
}

// TestReportedDurationOverContractLimit: a provider that reports a video longer than the
// contract's 15 s (spec §8: duration -1..15) is shown without duration (spec §2.5: omitted
// when no data), on both fronts' tasks (Ark's duration, Kling's), while the task settles at what
// the provider reported (docs/billing.md: a length up to the price's max_seconds, 30, is
// charged): 20 s at 0.01 a second, 0.20. Before the fix the answer said 20.
func TestReportedDurationOverContractLimit(t *testing.T) {
	a := startAnswersGateway(t)
	ark, _ := a.create(t, "video-answers")
	a.up.set(ark, 200, `{"id":"`+ark+`","model":"video-answers","status":"succeeded","duration":20,"resolution":"720p","content":{"video_url":"https://cdn.example.com/a.mp4"}}`)
	kling, upID := a.create(t, "kling-answers")
	a.up.set(upID, 200, klingAnswer(upID, `"task_status":"succeed","task_result":{"videos":[{"id":"v","url":"https://cdn.example.com/k.mp4","duration":"20"}]}`))
	for _, id := range []string{ark, kling} {
		got, err := a.poll(t, id)
		if err != nil || got.Status != model.StatusSucceeded {
			t.Fatalf("%s: the Ark SDK reads %q, %v; want succeeded", id, got.Status, err)
		}
		if d, has := a.raw(t, id).json(t)["duration"]; has {
			t.Fatalf("%s: the answer has the duration %v", id, d)
		}
	}
	from, to := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := call(t, "GET", "http://"+a.g.admin+"/mediagw/usage?format=csv&account=answers&group_by=model&from="+from+"&to="+to, "", nil)
		if strings.Contains(string(r.body), "video-answers") && strings.Contains(string(r.body), ",0.2\n") || strings.Contains(string(r.body), ",0.20\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage report = %d %s; want video-answers charged 0.20, the 20 s reported", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
