package integration

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeOpenAIVideos is a strict fake of OpenAI's videos API, from its published reference:
// POST /v1/videos creates a video from a JSON body (model, prompt, input_reference
// {image_url|file_id}, seconds "4"|"8"|"12", size 720x1280|1280x720|1024x1792|1792x1024) and
// answers the video object; GET /v1/videos/{video_id} reads it: status queued, in_progress
// (with progress), then completed or failed (error {code, message}); GET
// /v1/videos/{video_id}/content downloads a completed video's MP4; DELETE /v1/videos/{video_id}
// deletes it ({"id","object":"video.deleted","deleted":true}); POST
// /v1/videos/{video_id}/remix ({"prompt"}) makes a new video of a completed one, of its model,
// seconds and size, and answers its object with remixed_from_video_id. Every call carries
// Authorization: Bearer <key>. Errors are {"error":{"message","type","param","code"}}.
type fakeOpenAIVideos struct {
	key   string
	log   fakeLog
	tasks fakeTasks
	// Video is the bytes of every completed video's content.
	Video []byte

	mu      sync.Mutex
	videos  map[string]openaiCreate // what each video was created with
	deleted map[string]bool
}

// openaiCreate is the JSON create body of the reference.
type openaiCreate struct {
	Model          string  `json:"model"`
	Prompt         string  `json:"prompt"`
	Seconds        *string `json:"seconds"`
	Size           *string `json:"size"`
	InputReference *struct {
		ImageURL string `json:"image_url"`
		FileID   string `json:"file_id"`
	} `json:"input_reference"`
	// RemixedFrom is the video a remix was made of; not a create field.
	RemixedFrom string `json:"-"`
}

func newFakeOpenAIVideos(t *testing.T, key string) (*fakeOpenAIVideos, string) {
	f := &fakeOpenAIVideos{key: key, Video: []byte("\x00\x00\x00\x18ftypmp42 fake sora video"),
		videos: map[string]openaiCreate{}, deleted: map[string]bool{}}
	srv := startFake(t, f)
	return f, srv.URL + "/v1"
}

func (f *fakeOpenAIVideos) refuse(w http.ResponseWriter, status int, typ, code, message string) {
	var c any
	if code != "" {
		c = code
	}
	writeFakeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c}})
}

func (f *fakeOpenAIVideos) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := f.log.record(r)
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		f.refuse(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	rest, isVideo := strings.CutPrefix(r.URL.Path, "/v1/videos/")
	id, content := strings.CutSuffix(rest, "/content")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/videos":
		f.create(w, r, body)
	case r.Method == http.MethodPost && isVideo && strings.HasSuffix(rest, "/remix"):
		f.remix(w, strings.TrimSuffix(rest, "/remix"), body)
	case !isVideo || id == "" || strings.Contains(id, "/"):
		f.refuse(w, http.StatusNotFound, "invalid_request_error", "", "Invalid URL ("+r.Method+" "+r.URL.Path+")")
	case f.gone(id):
		f.refuse(w, http.StatusNotFound, "invalid_request_error", "", "Video with id '"+id+"' not found.")
	case r.Method == http.MethodGet && content:
		f.download(w, r, id)
	case r.Method == http.MethodGet:
		f.read(w, id)
	case r.Method == http.MethodDelete && !content:
		f.mu.Lock()
		f.deleted[id] = true
		f.mu.Unlock()
		writeFakeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "video.deleted", "deleted": true})
	default:
		f.refuse(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "Method not allowed.")
	}
}

// gone reports an id that no create returned, or a deleted video.
func (f *fakeOpenAIVideos) gone(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, made := f.videos[id]
	return !made || f.deleted[id]
}

func (f *fakeOpenAIVideos) create(w http.ResponseWriter, r *http.Request, body []byte) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "Content-Type must be application/json or multipart/form-data")
		return
	}
	var c openaiCreate
	if err := decodeStrict(body, &c); err != nil {
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	switch {
	case c.Prompt == "":
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "Missing required parameter: 'prompt'.")
		return
	case c.Model != "" && !slices.Contains([]string{"sora-2", "sora-2-pro"}, c.Model):
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "Invalid value for 'model'.")
		return
	case c.Seconds != nil && !slices.Contains([]string{"4", "8", "12"}, *c.Seconds):
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "Invalid value for 'seconds': expected one of '4', '8' or '12'.")
		return
	case c.Size != nil && !slices.Contains([]string{"720x1280", "1280x720", "1024x1792", "1792x1024"}, *c.Size):
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "Invalid value for 'size'.")
		return
	case c.InputReference != nil && (c.InputReference.ImageURL == "") == (c.InputReference.FileID == ""):
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "input_reference: provide exactly one of image_url or file_id.")
		return
	}
	if c.Model == "" {
		c.Model = "sora-2"
	}
	id := f.tasks.add(func(n int) string { return fmt.Sprintf("video_68d7512d07848190b3e45da0ecbebcde%04d", n) }, fakeTask{script: scriptOf(c.Prompt)})
	f.mu.Lock()
	f.videos[id] = c
	f.mu.Unlock()
	writeFakeJSON(w, http.StatusOK, f.object(id, c, "queued", 0))
}

// remix makes a new video of the completed video source: its model, seconds and size, with the
// body's prompt.
func (f *fakeOpenAIVideos) remix(w http.ResponseWriter, source string, body []byte) {
	var p struct {
		Prompt string `json:"prompt"`
	}
	if f.gone(source) {
		f.refuse(w, http.StatusNotFound, "invalid_request_error", "", "Video with id '"+source+"' not found.")
		return
	}
	if err := decodeStrict(body, &p); err != nil || p.Prompt == "" {
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "Missing required parameter: 'prompt'.")
		return
	}
	f.tasks.mu.Lock()
	task := *f.tasks.tasks[source]
	f.tasks.mu.Unlock()
	if !openaiCompleted(task, task.reads) {
		f.refuse(w, http.StatusBadRequest, "invalid_request_error", "", "Video '"+source+"' is not completed; only a completed video can be remixed.")
		return
	}
	f.mu.Lock()
	c := f.videos[source]
	f.mu.Unlock()
	c.Prompt, c.InputReference, c.RemixedFrom = p.Prompt, nil, source
	id := f.tasks.add(func(n int) string { return fmt.Sprintf("video_68d7512d07848190b3e45da0ecbebcde%04d", n) }, fakeTask{script: scriptOf(c.Prompt)})
	f.mu.Lock()
	f.videos[id] = c
	f.mu.Unlock()
	writeFakeJSON(w, http.StatusOK, f.object(id, c, "queued", 0))
}

// object is the video object of the reference.
func (f *fakeOpenAIVideos) object(id string, c openaiCreate, status string, progress int) map[string]any {
	seconds, size := "4", "720x1280"
	if c.Seconds != nil {
		seconds = *c.Seconds
	}
	if c.Size != nil {
		size = *c.Size
	}
	var remixedFrom any
	if c.RemixedFrom != "" {
		remixedFrom = c.RemixedFrom
	}
	return map[string]any{"id": id, "object": "video", "model": c.Model, "status": status, "progress": progress,
		"created_at": time.Now().Unix(), "completed_at": nil, "expires_at": nil, "prompt": c.Prompt,
		"size": size, "seconds": seconds, "remixed_from_video_id": remixedFrom, "error": nil}
}

func (f *fakeOpenAIVideos) read(w http.ResponseWriter, id string) {
	task, step, _ := f.tasks.step(id)
	if step == 0 {
		w.Header().Set("Retry-After", "2")
		f.refuse(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again in 2s.")
		return
	}
	f.mu.Lock()
	c := f.videos[id]
	f.mu.Unlock()
	var v map[string]any
	switch {
	case step == 1 || task.script == scriptSlow:
		v = f.object(id, c, "queued", 0)
	case step == 2:
		v = f.object(id, c, "in_progress", 40)
	case task.script == scriptUnknown:
		v = f.object(id, c, "processing", 60) // a status the reference does not list
	case task.script == scriptFail:
		v = f.object(id, c, "failed", 60)
		v["error"] = map[string]any{"code": "moderation_blocked", "message": "Your request was blocked by our moderation system."}
	case openaiCompleted(task, step):
		v = f.object(id, c, "completed", 100)
		v["completed_at"], v["expires_at"] = time.Now().Unix(), time.Now().Add(time.Hour).Unix()
	}
	writeFakeJSON(w, http.StatusOK, v)
}

// openaiCompleted reports whether the task's read at step showed it completed: its third state,
// for a task that finishes.
func openaiCompleted(task fakeTask, step int) bool {
	return step >= 3 && task.script != scriptSlow && task.script != scriptUnknown && task.script != scriptFail
}

// download serves a completed video's content; a video not completed is a 404 as the reference
// describes, as is a variant other than video, thumbnail or spritesheet.
func (f *fakeOpenAIVideos) download(w http.ResponseWriter, r *http.Request, id string) {
	f.tasks.mu.Lock()
	task := *f.tasks.tasks[id]
	f.tasks.mu.Unlock()
	step := task.reads
	if task.script == scriptThrottle {
		step-- // its first read was the 429 (see fakeTasks.step)
	}
	variant := r.URL.Query().Get("variant")
	if !openaiCompleted(task, step) || (variant != "" && variant != "video") {
		f.refuse(w, http.StatusNotFound, "invalid_request_error", "", "Video content is not available.")
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	_, _ = w.Write(f.Video) // a test fake: a failed write shows as a short body
}
