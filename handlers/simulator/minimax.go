package simulator

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
)

// MiniMax (Hailuo), as its video generation reference describes it: POST …/video_generation
// creates a task ({"task_id", "base_resp"}); GET …/query/video_generation?task_id=… reads it
// (Preparing, Queueing, Processing, Success with a file_id, or Fail); GET
// …/files/retrieve?file_id=… resolves the file to its download_url. Every answer carries
// base_resp, whose status_code 0 is success (errors come with HTTP 200 and a non-zero code).

// minimaxRoute returns the handler of a MiniMax request.
func (s *Simulator) minimaxRoute(r *http.Request) (http.HandlerFunc, bool) {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/video_generation") && !strings.HasSuffix(path, "/query/video_generation"):
		return s.minimaxCreate, true
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/query/video_generation"):
		return s.minimaxQuery, true
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/files/retrieve"):
		return s.minimaxFile, true
	case r.Method == http.MethodGet && strings.Contains(path, "/minimax-files/"):
		return s.minimaxDownload, true
	}
	return nil, false
}

// minimaxOK is the base_resp of a successful answer.
var minimaxOK = map[string]any{"status_code": 0, "status_msg": "success"}

func minimaxError(w http.ResponseWriter, code int, message string) {
	writeJSON(w, http.StatusOK, map[string]any{"base_resp": map[string]any{"status_code": code, "status_msg": message}})
}

func (s *Simulator) minimaxCreate(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Model    string `json:"model"`
		Prompt   string `json:"prompt"`
		Duration int    `json:"duration"`
	}
	if json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&b) != nil || b.Model == "" {
		minimaxError(w, 2013, "invalid params: the body is not JSON or names no model")
		return
	}
	t := s.addTask(strings.ToLower(rand.Text()[:18]), b.Model, b.Prompt, cmp.Or(b.Duration, 6))
	writeJSON(w, http.StatusOK, map[string]any{"task_id": t.ID, "base_resp": minimaxOK})
}

func (s *Simulator) minimaxQuery(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("task_id")
	_, status, ok := s.lookup(id)
	if !ok {
		minimaxError(w, 2013, "invalid params: task not found")
		return
	}
	answer := map[string]any{"task_id": id, "base_resp": minimaxOK,
		"status": map[string]string{"queued": "Queueing", "running": "Processing", "succeeded": "Success", "failed": "Fail"}[status]}
	if status == "succeeded" {
		answer["file_id"], answer["video_width"], answer["video_height"] = "file-"+id, 1366, 768
	}
	writeJSON(w, http.StatusOK, answer)
}

func (s *Simulator) minimaxFile(w http.ResponseWriter, r *http.Request) {
	fileID := r.URL.Query().Get("file_id")
	id, ok := strings.CutPrefix(fileID, "file-")
	if _, status, found := s.lookup(id); !ok || !found || status != "succeeded" {
		minimaxError(w, 1026, "file not found")
		return
	}
	i := strings.Index(r.URL.Path, "/files/retrieve")
	writeJSON(w, http.StatusOK, map[string]any{"base_resp": minimaxOK, "file": map[string]any{
		"file_id": fileID, "purpose": "video_generation", "filename": "output.mp4",
		"download_url": scheme(r) + "://" + r.Host + r.URL.Path[:i] + "/minimax-files/" + id + ".mp4"}})
}

// minimaxDownload serves a finished video's file: a few bytes of an MP4 header, as the
// simulator keeps no media.
func (s *Simulator) minimaxDownload(w http.ResponseWriter, r *http.Request) {
	_, name, _ := strings.Cut(r.URL.Path, "/minimax-files/")
	if _, status, ok := s.lookup(strings.TrimSuffix(name, ".mp4")); !ok || status != "succeeded" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	// A failed write means the client is gone.
	_, _ = w.Write([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom simulated video"))
}
