package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeKling is a strict fake of Kling's video API, from its published reference: every request
// carries Authorization: Bearer <JWT>, a token signed HS256 with the secret key whose iss is the
// access key, valid now (nbf not after now, exp after now and at most 30 minutes ahead);
// POST /v1/videos/text2video and /v1/videos/image2video create a task ({"code":0,"data":
// {"task_id","task_status":"submitted"}}); GET /v1/videos/{kind}/{task_id} reads it: submitted,
// processing, then succeed (task_result.videos[].url and duration, a string) or failed
// (task_status_msg). Errors are {"code":<number>,"message","request_id"}.
type fakeKling struct {
	accessKey, secretKey string
	log                  fakeLog
	tasks                fakeTasks
}

// klingText and klingImage are the create bodies of the reference.
type klingText struct {
	ModelName      string           `json:"model_name"`
	Prompt         string           `json:"prompt"`
	NegativePrompt string           `json:"negative_prompt"`
	CfgScale       *float64         `json:"cfg_scale"`
	Mode           *string          `json:"mode"`
	AspectRatio    *string          `json:"aspect_ratio"`
	Duration       *string          `json:"duration"`
	CameraControl  *json.RawMessage `json:"camera_control"`
	CallbackURL    string           `json:"callback_url"`
	ExternalTaskID string           `json:"external_task_id"`
}

type klingImage struct {
	ModelName      string           `json:"model_name"`
	Image          string           `json:"image"`
	ImageTail      string           `json:"image_tail"`
	Prompt         string           `json:"prompt"`
	NegativePrompt string           `json:"negative_prompt"`
	CfgScale       *float64         `json:"cfg_scale"`
	Mode           *string          `json:"mode"`
	Duration       *string          `json:"duration"`
	CameraControl  *json.RawMessage `json:"camera_control"`
	CallbackURL    string           `json:"callback_url"`
	ExternalTaskID string           `json:"external_task_id"`
}

func newFakeKling(t *testing.T, accessKey, secretKey string) (*fakeKling, string) {
	f := &fakeKling{accessKey: accessKey, secretKey: secretKey}
	srv := startFake(t, f)
	return f, srv.URL + "/v1"
}

func (f *fakeKling) refuse(w http.ResponseWriter, status, code int, message string) {
	writeFakeJSON(w, status, map[string]any{"code": code, "message": message, "request_id": "req-fake"})
}

// checkToken verifies the request's JWT as the reference describes; it answers the refusal's
// code and message, or 0.
func (f *fakeKling) checkToken(r *http.Request) (int, string) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return 1001, "Authorization is empty"
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return 1002, "Authorization is invalid"
	}
	mac := hmac.New(sha256.New, []byte(f.secretKey))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return 1002, "Authorization is invalid: signature"
	}
	var head struct{ Alg, Typ string }
	var claims struct {
		Iss      string
		Exp, Nbf int64
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	if err1 != nil || err2 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil ||
		head.Alg != "HS256" || head.Typ != "JWT" || claims.Iss != f.accessKey {
		return 1002, "Authorization is invalid: header or iss"
	}
	now := time.Now().Unix()
	switch {
	case claims.Nbf > now:
		return 1003, "Authorization is not yet valid"
	case claims.Exp <= now:
		return 1004, "Authorization has expired"
	case claims.Exp > now+30*60+10:
		return 1002, "Authorization is invalid: exp more than 30 minutes ahead"
	}
	return 0, ""
}

func (f *fakeKling) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := f.log.record(r)
	if code, message := f.checkToken(r); code != 0 {
		f.refuse(w, http.StatusUnauthorized, code, message)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/videos/")
	switch {
	case r.Method == http.MethodPost && (path == "text2video" || path == "image2video"):
		f.create(w, r, path, body)
	case r.Method == http.MethodGet && (strings.HasPrefix(path, "text2video/") || strings.HasPrefix(path, "image2video/")):
		kind, id, _ := strings.Cut(path, "/")
		f.read(w, kind, id)
	default:
		f.refuse(w, http.StatusNotFound, 1203, "the requested resource does not exist")
	}
}

func (f *fakeKling) create(w http.ResponseWriter, r *http.Request, kind string, body []byte) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		f.refuse(w, http.StatusBadRequest, 1200, "Content-Type must be application/json")
		return
	}
	var prompt, image string
	var mode, ratio, duration *string
	if kind == "text2video" {
		var c klingText
		if err := decodeStrict(body, &c); err != nil {
			f.refuse(w, http.StatusBadRequest, 1201, "invalid request parameters: "+err.Error())
			return
		}
		prompt, mode, ratio, duration = c.Prompt, c.Mode, c.AspectRatio, c.Duration
		if prompt == "" {
			f.refuse(w, http.StatusBadRequest, 1201, "prompt is required")
			return
		}
	} else {
		var c klingImage
		if err := decodeStrict(body, &c); err != nil {
			f.refuse(w, http.StatusBadRequest, 1201, "invalid request parameters: "+err.Error())
			return
		}
		prompt, image, mode, duration = c.Prompt, c.Image, c.Mode, c.Duration
		if image == "" {
			f.refuse(w, http.StatusBadRequest, 1201, "image is required")
			return
		}
	}
	switch {
	case mode != nil && !slices.Contains([]string{"std", "pro"}, *mode):
		f.refuse(w, http.StatusBadRequest, 1201, "mode must be std or pro")
		return
	case ratio != nil && !slices.Contains([]string{"16:9", "9:16", "1:1"}, *ratio):
		f.refuse(w, http.StatusBadRequest, 1201, "aspect_ratio must be 16:9, 9:16 or 1:1")
		return
	case duration != nil && !slices.Contains([]string{"5", "10"}, *duration):
		f.refuse(w, http.StatusBadRequest, 1201, "duration must be \"5\" or \"10\"")
		return
	}
	id := f.tasks.add(func(n int) string { return fmt.Sprintf("8672837417591%05d", n) }, fakeTask{kind: kind, script: scriptOf(prompt)})
	writeFakeJSON(w, http.StatusOK, map[string]any{"code": 0, "message": "SUCCEED", "request_id": "req-fake",
		"data": map[string]any{"task_id": id, "task_status": "submitted", "created_at": 1774805076166, "updated_at": 1774805076166}})
}

func (f *fakeKling) read(w http.ResponseWriter, kind, id string) {
	task, step, ok := f.tasks.step(id)
	if !ok || task.kind != kind {
		f.refuse(w, http.StatusNotFound, 1203, "task not found")
		return
	}
	if step == 0 {
		w.Header().Set("Retry-After", "2")
		f.refuse(w, http.StatusTooManyRequests, 1302, "API request too frequent")
		return
	}
	data := map[string]any{"task_id": id, "created_at": 1774805076166, "updated_at": 1774805076166}
	switch {
	case step == 1:
		data["task_status"] = "submitted"
	case step == 2:
		data["task_status"] = "processing"
	case task.script == scriptUnknown:
		data["task_status"] = "paused-for-review" // a state the reference does not list
	case task.script == scriptFail:
		data["task_status"], data["task_status_msg"] = "failed", "Failure to pass the risk control system"
	default:
		data["task_status"] = "succeed"
		data["task_result"] = map[string]any{"videos": []any{map[string]string{"id": "v-" + id, "url": "https://kling-result.example/" + id + ".mp4", "duration": "5.1"}}}
	}
	writeFakeJSON(w, http.StatusOK, map[string]any{"code": 0, "message": "SUCCEED", "request_id": "req-fake", "data": data})
}
