package simulator

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// The video task protocols other than Ark, each as its provider's published reference describes
// it, on the same timeline as Ark tasks (queued for QueuedFor, running for RunningFor, then
// succeeded, or failed for a prompt with FailMarker):
//
//   - DashScope (Wan): POST …/services/aigc/video-generation/video-synthesis and
//     …/services/aigc/image2video/video-synthesis with X-DashScope-Async: enable; GET
//     …/tasks/{task_id} (PENDING, RUNNING, SUCCEEDED, FAILED, CANCELED).
//   - Gemini (Veo): POST …/models/{model}:predictLongRunning; GET the operation name it returns
//     (done false, then done with a file URI, or an error); the file downloads with the key at
//     …/files/{id}:download?alt=media.
//   - Kling: POST …/videos/text2video and …/videos/image2video; GET …/videos/{kind}/{task_id}
//     (submitted, processing, succeed, failed); every request carries a JWT (see kling_auth.go).

// videoRoute returns the handler of a request of one of these protocols.
func (s *Simulator) videoRoute(r *http.Request) (http.HandlerFunc, bool) {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && (strings.HasSuffix(path, "/services/aigc/video-generation/video-synthesis") ||
		strings.HasSuffix(path, "/services/aigc/image2video/video-synthesis")):
		return s.dashCreate, true
	case r.Method == http.MethodGet && strings.Contains(path, "/api/v1/tasks/"):
		return s.dashTask, true
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":predictLongRunning"):
		return s.veoCreate, true
	case r.Method == http.MethodGet && strings.Contains(path, "/operations/"):
		return s.veoOperation, true
	case r.Method == http.MethodGet && strings.Contains(path, "/files/") && strings.HasSuffix(path, ":download"):
		return s.veoDownload, true
	case r.Method == http.MethodPost && (strings.HasSuffix(path, "/videos/text2video") || strings.HasSuffix(path, "/videos/image2video")):
		return s.klingCreate, true
	case r.Method == http.MethodGet && (strings.Contains(path, "/videos/text2video/") || strings.Contains(path, "/videos/image2video/")):
		return s.klingTask, true
	}
	return s.minimaxRoute(r)
}

// addTask records a task of another protocol under id, on the common timeline.
func (s *Simulator) addTask(id, model, prompt string, seconds int) *task {
	t := &task{ID: id, Model: model, Created: s.now(), Fail: strings.Contains(prompt, FailMarker),
		Resolution: "720p", Ratio: "16:9", Duration: seconds}
	s.keep(t)
	return t
}

// lookup returns the task and its status now.
func (s *Simulator) lookup(id string) (task, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return task{}, "", false
	}
	return *t, s.status(t), true
}

// videoURL is a finished task's public result address.
func (s *Simulator) videoURL(id string) string { return strings.ReplaceAll(s.VideoURL, "{id}", id) }

// --- DashScope ---

func (s *Simulator) dashCreate(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-DashScope-Async") != "enable" {
		dashError(w, http.StatusForbidden, "AccessDenied", "current user api does not support synchronous calls")
		return
	}
	var b struct {
		Model string `json:"model"`
		Input struct {
			Prompt string `json:"prompt"`
		} `json:"input"`
		Parameters struct {
			Duration int `json:"duration"`
		} `json:"parameters"`
	}
	if json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&b) != nil || b.Model == "" {
		dashError(w, http.StatusBadRequest, "InvalidParameter", "the request body is invalid or names no model")
		return
	}
	t := s.addTask(strings.ToLower(rand.Text()[:8])+"-5ff8-4d82-bcb6-"+strings.ToLower(rand.Text()[:12]), b.Model, b.Input.Prompt, cmp.Or(b.Parameters.Duration, 5))
	writeJSON(w, http.StatusOK, map[string]any{"request_id": rand.Text(), "output": map[string]string{"task_id": t.ID, "task_status": "PENDING"}})
}

func (s *Simulator) dashTask(w http.ResponseWriter, r *http.Request) {
	_, id, _ := strings.Cut(r.URL.Path, "/api/v1/tasks/")
	t, status, ok := s.lookup(id)
	output := map[string]any{"task_id": id, "task_status": "UNKNOWN"}
	answer := map[string]any{"request_id": rand.Text(), "output": output}
	if ok {
		output["task_status"] = map[string]string{"queued": "PENDING", "running": "RUNNING", "succeeded": "SUCCEEDED",
			"failed": "FAILED", "cancelled": "CANCELED"}[status]
	}
	switch status {
	case "succeeded":
		output["video_url"] = s.videoURL(id)
		answer["usage"] = map[string]any{"video_duration": t.Duration, "video_ratio": "1280*720", "video_count": 1}
	case "failed":
		output["code"], output["message"] = "DataInspectionFailed", "the simulator was asked to fail this task"
	}
	writeJSON(w, http.StatusOK, answer)
}

func dashError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]string{"request_id": rand.Text(), "code": code, "message": message})
}

// --- Gemini (Veo) ---

func (s *Simulator) veoCreate(w http.ResponseWriter, r *http.Request) {
	_, rest, _ := strings.Cut(r.URL.Path, "/models/")
	model := strings.TrimSuffix(rest, ":predictLongRunning")
	var b struct {
		Instances []struct {
			Prompt string `json:"prompt"`
		} `json:"instances"`
		Parameters struct {
			DurationSeconds int `json:"durationSeconds"`
		} `json:"parameters"`
	}
	if json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&b) != nil || len(b.Instances) != 1 || model == "" {
		veoError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received: exactly one instance is required.")
		return
	}
	name := "models/" + model + "/operations/" + strings.ToLower(rand.Text()[:12])
	s.addTask(name, model, b.Instances[0].Prompt, cmp.Or(b.Parameters.DurationSeconds, 8))
	writeJSON(w, http.StatusOK, map[string]string{"name": name})
}

func (s *Simulator) veoOperation(w http.ResponseWriter, r *http.Request) {
	i := strings.Index(r.URL.Path, "/models/")
	if i < 0 {
		veoError(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
		return
	}
	name := r.URL.Path[i+1:]
	_, status, ok := s.lookup(name)
	if !ok {
		veoError(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
		return
	}
	op := map[string]any{"name": name}
	switch status {
	case "succeeded":
		file := scheme(r) + "://" + r.Host + r.URL.Path[:i] + "/files/" + name[strings.LastIndex(name, "/")+1:] + ":download?alt=media"
		op["done"] = true
		op["response"] = map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
			"generateVideoResponse": map[string]any{"generatedSamples": []any{map[string]any{"video": map[string]string{"uri": file}}}}}
	case "failed":
		op["done"] = true
		op["error"] = map[string]any{"code": 3, "message": "the simulator was asked to fail this task", "status": "INVALID_ARGUMENT"}
	}
	writeJSON(w, http.StatusOK, op)
}

// veoDownload serves a finished video's file (which the key reaches, as the Gemini API's files
// do): a few bytes of an MP4 header, as the simulator keeps no media.
func (s *Simulator) veoDownload(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("alt") != "media" {
		veoError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "alt=media is required to download a file")
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	// A failed write means the client is gone.
	_, _ = w.Write([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom simulated video"))
}

func veoError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": code}})
}

// scheme is the request's scheme as the client used it.
func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// --- Kling ---

func (s *Simulator) klingCreate(w http.ResponseWriter, r *http.Request) {
	if !s.klingAuthorized(w, r) {
		return
	}
	var b struct {
		ModelName string `json:"model_name"`
		Prompt    string `json:"prompt"`
		Duration  string `json:"duration"`
	}
	if json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&b) != nil {
		klingError(w, http.StatusBadRequest, 1201, "the request body is invalid")
		return
	}
	seconds, err := strconv.Atoi(cmp.Or(b.Duration, "5"))
	if err != nil {
		klingError(w, http.StatusBadRequest, 1201, "duration must be \"5\" or \"10\"")
		return
	}
	t := s.addTask(strconv.FormatUint(800_000_000_000_000_000+mrand.Uint64N(100_000_000_000_000_000), 10), cmp.Or(b.ModelName, "kling-v1"), b.Prompt, seconds)
	ms := t.Created.UnixMilli()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "message": "SUCCEED", "request_id": rand.Text(),
		"data": map[string]any{"task_id": t.ID, "task_status": "submitted", "created_at": ms, "updated_at": ms}})
}

func (s *Simulator) klingTask(w http.ResponseWriter, r *http.Request) {
	if !s.klingAuthorized(w, r) {
		return
	}
	id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	t, status, ok := s.lookup(id)
	if !ok {
		klingError(w, http.StatusNotFound, 1203, "task not found")
		return
	}
	data := map[string]any{"task_id": id, "created_at": t.Created.UnixMilli(), "updated_at": s.now().UnixMilli(),
		"task_status": map[string]string{"queued": "submitted", "running": "processing", "succeeded": "succeed", "failed": "failed"}[status]}
	switch status {
	case "succeeded":
		data["task_result"] = map[string]any{"videos": []any{map[string]string{"id": id, "url": s.videoURL(id), "duration": strconv.Itoa(t.Duration)}}}
	case "failed":
		data["task_status_msg"] = "the simulator was asked to fail this task"
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "message": "SUCCEED", "request_id": rand.Text(), "data": data})
}

func klingError(w http.ResponseWriter, status, code int, message string) {
	writeJSON(w, status, map[string]any{"code": code, "message": message, "request_id": rand.Text()})
}
