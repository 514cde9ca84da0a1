package simulator

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OpenAI's videos API, as its published reference describes it, on the common timeline:
// POST …/videos (a JSON body, or multipart/form-data as the SDKs send it: model, prompt,
// seconds, size) answers the video object, queued; GET …/videos/{video_id} reads it
// (queued, in_progress with progress, completed, or failed with error); GET
// …/videos/{video_id}/content downloads a completed video with the key; DELETE
// …/videos/{video_id} deletes it; GET …/videos lists the videos, newest first.

// openAIVideoSizes are the sizes the API takes; the first is the default.
var openAIVideoSizes = []string{"720x1280", "1280x720", "1024x1792", "1792x1024"}

// videosRoute returns the handler of a videos API request.
func (s *Simulator) videosRoute(r *http.Request) (http.HandlerFunc, bool) {
	_, rest, ok := strings.Cut(r.URL.Path, "/videos")
	if !ok || strings.Contains(r.URL.Path, "/video/") || isKling(r.URL.Path) {
		return nil, false
	}
	id, content := strings.CutSuffix(strings.TrimPrefix(rest, "/"), "/content")
	switch {
	case rest == "" && r.Method == http.MethodPost:
		return s.videoCreate, true
	case rest == "" && r.Method == http.MethodGet:
		return s.videoList, true
	case id == "" || strings.Contains(id, "/"):
		return nil, false
	case content && r.Method == http.MethodGet:
		return func(w http.ResponseWriter, _ *http.Request) { s.videoContent(w, id) }, true
	case !content && r.Method == http.MethodGet:
		return func(w http.ResponseWriter, _ *http.Request) { s.videoRetrieve(w, id) }, true
	case !content && r.Method == http.MethodDelete:
		return func(w http.ResponseWriter, _ *http.Request) { s.videoDelete(w, id) }, true
	}
	return nil, false
}

func (s *Simulator) videoCreate(w http.ResponseWriter, r *http.Request) {
	var b struct{ Model, Prompt, Seconds, Size string }
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			openAIError(w, http.StatusBadRequest, "the multipart body could not be read")
			return
		}
		b.Model, b.Prompt, b.Seconds, b.Size = r.FormValue("model"), r.FormValue("prompt"), r.FormValue("seconds"), r.FormValue("size")
	} else if json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&b) != nil {
		openAIError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.")
		return
	}
	b.Seconds, b.Size, b.Model = cmp.Or(b.Seconds, "4"), cmp.Or(b.Size, openAIVideoSizes[0]), cmp.Or(b.Model, "sora-2")
	switch {
	case b.Prompt == "":
		openAIError(w, http.StatusBadRequest, "Missing required parameter: 'prompt'.")
		return
	case !slices.Contains([]string{"4", "8", "12"}, b.Seconds):
		openAIError(w, http.StatusBadRequest, "Invalid value for 'seconds': expected one of '4', '8' or '12'.")
		return
	case !slices.Contains(openAIVideoSizes, b.Size):
		openAIError(w, http.StatusBadRequest, "Invalid value for 'size'.")
		return
	}
	seconds, _ := strconv.Atoi(b.Seconds) // checked above
	t := s.addTask("video_"+strings.ToLower(rand.Text()[:24]), b.Model, b.Prompt, seconds)
	s.mu.Lock()
	t.Size = b.Size
	view := s.videoObject(t)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, view)
}

// videoObject is the video object of t. s.mu must be held.
func (s *Simulator) videoObject(t *task) map[string]any {
	v := map[string]any{"id": t.ID, "object": "video", "model": t.Model, "progress": 0, "created_at": t.Created.Unix(),
		"completed_at": nil, "expires_at": nil, "prompt": nil, "size": t.Size, "seconds": strconv.Itoa(t.Duration),
		"remixed_from_video_id": nil, "error": nil}
	switch status := s.status(t); status {
	case "queued":
		v["status"] = "queued"
	case "running":
		v["status"] = "in_progress"
		if s.RunningFor > 0 {
			v["progress"] = min(99, int(100*s.now().Sub(t.Created.Add(s.QueuedFor))/s.RunningFor))
		}
	default:
		done := t.Created.Add(s.QueuedFor + s.RunningFor)
		v["status"], v["progress"], v["completed_at"] = "completed", 100, done.Unix()
		v["expires_at"] = done.Add(24 * time.Hour).Unix()
		if status != "succeeded" {
			v["status"], v["expires_at"] = "failed", nil
			v["error"] = map[string]string{"code": "moderation_blocked", "message": "the simulator was asked to fail this task"}
		}
	}
	return v
}

// video returns the video object of id, or false.
func (s *Simulator) video(id string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || !strings.HasPrefix(id, "video_") {
		return nil, false
	}
	return s.videoObject(t), true
}

func (s *Simulator) videoRetrieve(w http.ResponseWriter, id string) {
	v, ok := s.video(id)
	if !ok {
		openAIError(w, http.StatusNotFound, "Video with id '"+id+"' not found.")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// videoContent serves a completed video's MP4: a few bytes of an MP4 header, as the simulator
// keeps no media.
func (s *Simulator) videoContent(w http.ResponseWriter, id string) {
	v, ok := s.video(id)
	if !ok || v["status"] != "completed" {
		openAIError(w, http.StatusNotFound, "Video content is not available.")
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	// A failed write means the client is gone.
	_, _ = w.Write([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom simulated video"))
}

func (s *Simulator) videoDelete(w http.ResponseWriter, id string) {
	if _, ok := s.video(id); !ok {
		openAIError(w, http.StatusNotFound, "Video with id '"+id+"' not found.")
		return
	}
	s.mu.Lock()
	delete(s.tasks, id)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "video.deleted", "deleted": true})
}

// videoList lists the videos, newest first (up to 100).
func (s *Simulator) videoList(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	data := []any{}
	for i := len(s.order) - 1; i >= 0 && len(data) < 100; i-- {
		if t, ok := s.tasks[s.order[i]]; ok && strings.HasPrefix(t.ID, "video_") {
			data = append(data, s.videoObject(t))
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": false})
}

// openAIError answers in OpenAI's error shape.
func openAIError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": nil}})
}
