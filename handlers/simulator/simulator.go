// Package simulator is a local stand-in for upstream model providers: the video task protocols
// of Ark, DashScope (Wan), Gemini (Veo), Kling (video_protocols.go), MiniMax (minimax.go) and OpenAI's videos
// (openai_videos.go), and OpenAI-style endpoints, in memory. It exists for demos, development and load tests; a
// production gateway never needs it.
//
// Video tasks move queued → running → succeeded after configurable times. A task whose prompt
// contains FailMarker ends failed instead. Like the Ark service, a task created with a
// callback_url gets an unsigned POST of its query answer when it starts running and when it ends,
// tried once. DELETE cancels a queued task, refuses a running one and
// deletes a finished one, as the Ark API does.
package simulator

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FailMarker in a task's prompt makes the simulated task fail.
const FailMarker = "[[fail]]"

// maxTasks bounds the simulator's memory; past it the oldest tasks are forgotten.
const maxTasks = 200_000

// Simulator serves simulated upstream endpoints. The zero value is not ready: use New.
type Simulator struct {
	// QueuedFor and RunningFor are how long a task stays in each state.
	QueuedFor, RunningFor time.Duration
	// VideoURL is the result address; "{id}" is replaced by the task id.
	VideoURL string
	// APIKey, when set, is the only bearer token accepted (or x-api-key, x-goog-api-key).
	APIKey string
	// KlingAccessKey and KlingSecretKey are the credential of the Kling protocol: its requests
	// carry a JWT made of them instead of APIKey. Without them Kling requests are refused.
	KlingAccessKey, KlingSecretKey string
	// Now is the clock of the task timeline and of the dates in answers. Default: time.Now.
	Now func() time.Time

	routes map[string]http.HandlerFunc // OpenAI-style endpoints by path suffix

	mu        sync.Mutex
	tasks     map[string]*task
	order     []string
	listCalls int
}

type task struct {
	ID, Model         string
	Created           time.Time
	Fail, LastFrame   bool
	Cancelled         bool
	Resolution, Ratio string
	Duration          int
	Size              string // an OpenAI video's
}

// New returns a simulator with default timings: 2 s queued, 5 s running.
func New() *Simulator {
	s := &Simulator{
		QueuedFor:  2 * time.Second,
		RunningFor: 5 * time.Second,
		VideoURL:   "https://simulator.mediagw.invalid/videos/{id}.mp4",
		tasks:      map[string]*task{},
	}
	s.routes = s.openAIRoutes()
	return s
}

func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serve, isVideo := s.videoRoute(r)
	if isVideo && isKling(r.URL.Path) {
		serve(w, r) // Kling's JWT is checked by its handlers
		return
	}
	if !s.authorized(r) {
		upstreamError(w, http.StatusUnauthorized, "AuthenticationError", "the API key is missing or invalid")
		return
	}
	if isVideo {
		serve(w, r)
		return
	}
	if serve, ok := s.videosRoute(r); ok {
		serve(w, r)
		return
	}
	path := r.URL.Path
	if _, rest, ok := strings.Cut(path, "/contents/generations/tasks"); ok {
		s.serveTasks(w, r, strings.Trim(rest, "/"))
		return
	}
	if _, id, ok := strings.Cut(path, "/images/tasks/"); ok && r.Method == http.MethodGet {
		s.imageTask(w, id)
		return
	}
	for suffix, serve := range s.routes {
		if strings.HasSuffix(path, suffix) {
			serve(w, r)
			return
		}
	}
	if strings.Contains(path, "/models/") && strings.Contains(path, ":") {
		s.generateContent(w, r)
		return
	}
	upstreamError(w, http.StatusNotFound, "NotFound", "the simulator has no endpoint "+path)
}

func (s *Simulator) authorized(r *http.Request) bool {
	got := r.Header.Get("Authorization")
	if got == "" {
		got = "Bearer " + r.Header.Get("X-Api-Key") + r.Header.Get("X-Goog-Api-Key")
	}
	token, ok := strings.CutPrefix(got, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return false
	}
	return s.APIKey == "" || token == s.APIKey
}

func (s *Simulator) serveTasks(w http.ResponseWriter, r *http.Request, id string) {
	switch {
	case id == "" && r.Method == http.MethodPost:
		s.createTask(w, r)
	case id == "" && r.Method == http.MethodGet:
		s.listTasks(w, r)
	case id != "" && r.Method == http.MethodGet:
		s.getTask(w, id)
	case id != "" && r.Method == http.MethodDelete:
		s.deleteTask(w, id)
	default:
		upstreamError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "method not allowed")
	}
}

type createBody struct {
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	ReturnLastFrame bool   `json:"return_last_frame"`
	CallbackURL     string `json:"callback_url"`
	Resolution      string `json:"resolution"`
	Ratio           string `json:"ratio"`
	Duration        *int   `json:"duration"`
}

func (s *Simulator) createTask(w http.ResponseWriter, r *http.Request) {
	var b createBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&b); err != nil {
		upstreamError(w, http.StatusBadRequest, "InvalidParameter", "the request body must be a JSON object")
		return
	}
	if b.Model == "" || len(b.Content) == 0 {
		upstreamError(w, http.StatusBadRequest, "MissingParameter", "model and content are required")
		return
	}
	t := &task{
		ID:    "cgt-" + s.now().UTC().Format("20060102150405") + "-" + strings.ToLower(rand.Text()[:8]),
		Model: b.Model, Created: s.now(), LastFrame: b.ReturnLastFrame,
		Resolution: or(b.Resolution, "720p"), Ratio: or(b.Ratio, "16:9"), Duration: 5,
	}
	if b.Duration != nil && *b.Duration > 0 {
		t.Duration = *b.Duration
	}
	for _, c := range b.Content {
		t.Fail = t.Fail || (c.Type == "text" && strings.Contains(c.Text, FailMarker))
	}
	if b.CallbackURL != "" {
		s.scheduleCallbacks(t, b.CallbackURL)
	}
	s.keep(t)
	writeJSON(w, http.StatusOK, map[string]string{"id": t.ID})
}

// keep stores a new task, forgetting the oldest past maxTasks.
func (s *Simulator) keep(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks[t.ID] = t
	s.order = append(s.order, t.ID)
	for len(s.order) > maxTasks {
		delete(s.tasks, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *Simulator) getTask(w http.ResponseWriter, id string) {
	s.mu.Lock()
	t, ok := s.tasks[id]
	var view map[string]any
	if ok {
		view = s.view(t)
	}
	s.mu.Unlock()
	if !ok {
		upstreamError(w, http.StatusNotFound, "ResourceNotFound", "task "+id+" not found")
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// listTasks answers like Ark's list: newest first, filtered by filter.status, filter.model and
// filter.task_ids (repeated), paginated by page_num and page_size (1–500; without page_size every
// match is listed, unlike Ark's default of 10). With
// filter.task_ids the tasks are looked up by id, so a batched read of a few tasks costs the same
// however many tasks the simulator holds.
func (s *Simulator) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pageNum, pageSize := 1, maxTasks
	if v := q.Get("page_num"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			upstreamError(w, http.StatusBadRequest, "InvalidParameter", "page_num must be a positive integer")
			return
		}
		pageNum = n
	}
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			upstreamError(w, http.StatusBadRequest, "InvalidParameter", "page_size must be between 1 and 500")
			return
		}
		pageSize = n
	}
	keep := func(v map[string]any) bool {
		if st := q.Get("filter.status"); st != "" && v["status"] != st {
			return false
		}
		if m := q.Get("filter.model"); m != "" && v["model"] != m {
			return false
		}
		return true
	}
	s.mu.Lock()
	s.listCalls++
	items := []map[string]any{}
	if ids := q["filter.task_ids"]; len(ids) > 0 {
		seen := map[string]bool{}
		for _, id := range ids {
			if t, ok := s.tasks[id]; ok && !seen[id] {
				seen[id] = true
				if v := s.view(t); keep(v) {
					items = append(items, v)
				}
			}
		}
		slices.SortStableFunc(items, func(a, b map[string]any) int {
			return cmp.Compare(b["created_at"].(int64), a["created_at"].(int64))
		})
	} else {
		for i := len(s.order) - 1; i >= 0; i-- {
			if t, ok := s.tasks[s.order[i]]; ok {
				if v := s.view(t); keep(v) {
					items = append(items, v)
				}
			}
		}
	}
	s.mu.Unlock()
	total := len(items)
	start := min((pageNum-1)*pageSize, total)
	writeJSON(w, http.StatusOK, map[string]any{"items": items[start:min(start+pageSize, total)], "total": total})
}

// ListCalls counts the list requests served, for benchmarks.
func (s *Simulator) ListCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listCalls
}

func (s *Simulator) deleteTask(w http.ResponseWriter, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		upstreamError(w, http.StatusNotFound, "ResourceNotFound", "task "+id+" not found")
		return
	}
	switch s.status(t) {
	case "queued":
		t.Cancelled = true
	case "running":
		upstreamError(w, http.StatusConflict, "InvalidAction.TaskRunning", "a running task cannot be cancelled")
		return
	default:
		delete(s.tasks, id)
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// status is the task's state at this moment.
func (s *Simulator) status(t *task) string {
	age := s.now().Sub(t.Created)
	switch {
	case t.Cancelled:
		return "cancelled"
	case age < s.QueuedFor:
		return "queued"
	case age < s.QueuedFor+s.RunningFor:
		return "running"
	case t.Fail:
		return "failed"
	default:
		return "succeeded"
	}
}

// view is the Ark query answer for a task.
func (s *Simulator) view(t *task) map[string]any {
	status := s.status(t)
	updated := t.Created
	switch status {
	case "running":
		updated = t.Created.Add(s.QueuedFor)
	case "succeeded", "failed":
		updated = t.Created.Add(s.QueuedFor + s.RunningFor)
	}
	v := map[string]any{
		"id": t.ID, "model": t.Model, "status": status, "error": nil,
		"created_at": t.Created.Unix(), "updated_at": updated.Unix(),
		"service_tier": "default", "execution_expires_after": 172800,
	}
	switch status {
	case "succeeded":
		content := map[string]string{"video_url": strings.ReplaceAll(s.VideoURL, "{id}", t.ID)}
		if t.LastFrame {
			content["last_frame_url"] = strings.ReplaceAll(s.VideoURL, "{id}", t.ID) + ".last.png"
		}
		v["content"] = content
		v["usage"] = map[string]int{"completion_tokens": 108900, "total_tokens": 108900}
		v["resolution"], v["ratio"], v["duration"], v["framespersecond"], v["seed"] = t.Resolution, t.Ratio, t.Duration, 24, 42
	case "failed":
		v["error"] = map[string]string{"code": "OutputVideoSensitiveContentDetected", "message": "the simulator was asked to fail this task"}
	}
	return v
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	// The status is sent; a failed write means the client is gone.
	_ = enc.Encode(v)
}

// upstreamError answers in the providers' error shape.
func upstreamError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message, "type": "simulator_error"}})
}

// scheduleCallbacks posts the task's state to url when it starts running and when it ends.
func (s *Simulator) scheduleCallbacks(t *task, url string) {
	post := func() {
		s.mu.Lock()
		view, cancelled := s.view(t), t.Cancelled
		s.mu.Unlock()
		if cancelled {
			return
		}
		body, _ := json.Marshal(view)
		client := &http.Client{Timeout: 5 * time.Second}
		if resp, err := client.Post(url, "application/json", bytes.NewReader(body)); err == nil {
			resp.Body.Close()
		}
	}
	time.AfterFunc(s.QueuedFor+time.Millisecond, post)
	time.AfterFunc(s.QueuedFor+s.RunningFor+time.Millisecond, post)
}

// now reads the simulator's clock.
func (s *Simulator) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
