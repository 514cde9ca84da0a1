package integration

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// fakeMiniMax is a strict fake of MiniMax's video generation API, from its published reference:
// POST /v1/video_generation creates a task ({"task_id","base_resp"}); GET
// /v1/query/video_generation?task_id=… reads it: Preparing, Queueing, Processing, then Success
// with a file_id (and video_width, video_height) or Fail; GET /v1/files/retrieve?file_id=… gives
// the file's download_url, a signed address that takes no key. Every call carries
// Authorization: Bearer <key>. Errors come as HTTP 200 with a non-zero base_resp.status_code
// (1002 rate limit, 1004 authentication, 2013 invalid parameters).
type fakeMiniMax struct {
	key string
	log fakeLog
	// Video is the bytes of every finished task's file.
	Video []byte
	// cdn is the origin of the download addresses. MiniMax's storage is another host, but the
	// gateway connects off the upstream's origin only to public addresses, which a test on
	// loopback has none of: the fake serves its downloads itself unless a test names another.
	cdn   string
	tasks fakeTasks
}

// minimaxCreate is the create body of the reference.
type minimaxCreate struct {
	Model            string  `json:"model"`
	Prompt           string  `json:"prompt"`
	PromptOptimizer  *bool   `json:"prompt_optimizer"`
	FastPretreatment *bool   `json:"fast_pretreatment"`
	Duration         *int    `json:"duration"`
	Resolution       *string `json:"resolution"`
	FirstFrameImage  string  `json:"first_frame_image"`
	LastFrameImage   string  `json:"last_frame_image"`
	SubjectReference []any   `json:"subject_reference"`
	CallbackURL      string  `json:"callback_url"`
	AigcWatermark    *bool   `json:"aigc_watermark"`
}

func newFakeMiniMax(t *testing.T, key string) (*fakeMiniMax, string) {
	f := &fakeMiniMax{key: key, Video: []byte("\x00\x00\x00\x18ftypmp42 fake hailuo video")}
	srv := startFake(t, f)
	f.cdn = srv.URL
	return f, srv.URL + "/v1"
}

func (f *fakeMiniMax) answer(w http.ResponseWriter, code int, message string, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["base_resp"] = map[string]any{"status_code": code, "status_msg": message}
	writeFakeJSON(w, http.StatusOK, fields)
}

func (f *fakeMiniMax) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/cdn/") {
		f.download(w, r)
		return
	}
	body := f.log.record(r)
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		f.answer(w, 1004, "login fail: Please carry the API secret key in the 'Authorization' field of the request header", nil)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/video_generation":
		f.create(w, r, body)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/query/video_generation":
		f.read(w, r.URL.Query().Get("task_id"))
	case r.Method == http.MethodGet && r.URL.Path == "/v1/files/retrieve":
		id := r.URL.Query().Get("file_id")
		if !strings.HasPrefix(id, "file-") {
			f.answer(w, 2013, "invalid params, file_id", nil)
			return
		}
		f.answer(w, 0, "success", map[string]any{"file": map[string]any{"file_id": id, "bytes": len(f.Video), "filename": "output.mp4",
			"purpose": "video_generation", "download_url": f.cdn + "/cdn/" + id + ".mp4?sig=signed"}})
	default:
		http.Error(w, "404 page not found", http.StatusNotFound)
	}
}

func (f *fakeMiniMax) create(w http.ResponseWriter, r *http.Request, body []byte) {
	var c minimaxCreate
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || decodeStrict(body, &c) != nil || c.Model == "" {
		f.answer(w, 2013, "invalid params", nil)
		return
	}
	switch {
	case c.Prompt == "" && c.FirstFrameImage == "":
		f.answer(w, 2013, "invalid params, prompt or first_frame_image is required", nil)
		return
	case c.Duration != nil && *c.Duration != 6 && *c.Duration != 10:
		f.answer(w, 2013, "invalid params, duration must be 6 or 10", nil)
		return
	case c.Resolution != nil && !slices.Contains([]string{"512P", "768P", "1080P"}, *c.Resolution):
		f.answer(w, 2013, "invalid params, resolution", nil)
		return
	case c.Duration != nil && *c.Duration == 10 && c.Resolution != nil && *c.Resolution == "1080P":
		f.answer(w, 2013, "invalid params, 1080P supports a duration of 6 only", nil)
		return
	}
	id := f.tasks.add(func(n int) string { return fmt.Sprintf("1069161122%05d", n) }, fakeTask{script: scriptOf(c.Prompt)})
	f.answer(w, 0, "success", map[string]any{"task_id": id})
}

func (f *fakeMiniMax) read(w http.ResponseWriter, id string) {
	task, step, ok := f.tasks.step(id)
	if !ok {
		f.answer(w, 2013, "invalid params, task_id", nil)
		return
	}
	if step == 0 {
		f.answer(w, 1002, "rate limit exceeded(RPM)", nil)
		return
	}
	fields := map[string]any{"task_id": id}
	switch {
	case step == 1:
		fields["status"] = "Preparing"
	case step == 2:
		fields["status"] = "Queueing"
	case step == 3 || task.script == scriptSlow:
		fields["status"] = "Processing"
	case task.script == scriptUnknown:
		fields["status"] = "Paused" // a state the reference does not list
	case task.script == scriptFail:
		fields["status"] = "Fail"
	default:
		fields["status"], fields["file_id"], fields["video_width"], fields["video_height"] = "Success", "file-"+id, 1920, 1080
	}
	f.answer(w, 0, "success", fields)
}

// download serves a file at its signed download address, which needs no key: the signature is
// checked. (The gateway sends the operator's key to the upstream's own origin, which serves the
// downloads in these tests, so a key there is not refused.)
func (f *fakeMiniMax) download(w http.ResponseWriter, r *http.Request) {
	f.log.record(r)
	if r.URL.Query().Get("sig") != "signed" || !strings.HasPrefix(r.URL.Path, "/cdn/file-") {
		http.Error(w, "no signature", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	_, _ = w.Write(f.Video) // a test fake: a failed write shows as a short body
}
