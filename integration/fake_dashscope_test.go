package integration

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeDashScope is a strict fake of Alibaba Cloud Model Studio's video synthesis API, from its
// published reference: POST /api/v1/services/aigc/video-generation/video-synthesis (text- and
// image-to-video) and …/image2video/video-synthesis (first and last frame), which take only
// asynchronous calls (X-DashScope-Async: enable) with Authorization: Bearer <key>, and
// GET /api/v1/tasks/{task_id}, whose output.task_status is PENDING, RUNNING, SUCCEEDED, FAILED,
// CANCELED or UNKNOWN (also the answer for a task id it does not know). Errors are
// {"request_id","code","message"}.
type fakeDashScope struct {
	key   string
	log   fakeLog
	tasks fakeTasks

	mu    sync.Mutex
	sizes map[string]string // the size each task was asked for
}

// dashCreate is the create body of the reference.
type dashCreate struct {
	Model string `json:"model"`
	Input struct {
		Prompt         string `json:"prompt"`
		NegativePrompt string `json:"negative_prompt"`
		ImgURL         string `json:"img_url"`
		FirstFrameURL  string `json:"first_frame_url"`
		LastFrameURL   string `json:"last_frame_url"`
	} `json:"input"`
	Parameters *struct {
		Size         *string `json:"size"`
		Resolution   *string `json:"resolution"`
		Duration     *int    `json:"duration"`
		Seed         *int64  `json:"seed"`
		Watermark    *bool   `json:"watermark"`
		Audio        *bool   `json:"audio"`
		PromptExtend *bool   `json:"prompt_extend"`
	} `json:"parameters"`
}

var (
	dashSize       = regexp.MustCompile(`^[1-9][0-9]{2,3}\*[1-9][0-9]{2,3}$`)
	dashResolution = []string{"480P", "720P", "1080P"}
	// dashTierSizes are the text-to-video sizes of each tier, and dashTiers the tiers of the
	// models whose reference names them (a model not named here takes every tier).
	dashTierSizes = map[string][]string{
		"480P":  {"832*480", "480*832", "624*624"},
		"720P":  {"1280*720", "720*1280", "960*960", "1088*832", "832*1088"},
		"1080P": {"1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632"},
	}
	dashTiers = map[string][]string{
		"wan2.5-t2v-preview": {"480P", "720P", "1080P"},
		"wan2.2-t2v-plus":    {"480P", "1080P"},
		"wan2.1-t2v-turbo":   {"480P", "720P"},
		"wan2.1-t2v-plus":    {"720P"},
		"wan2.2-kf2v-flash":  {"480P", "720P", "1080P"},
		"wan2.2-i2v-plus":    {"480P", "1080P"},
	}
)

// dashOffers reports whether the model offers the tier.
func dashOffers(model, tier string) bool {
	offered, ok := dashTiers[model]
	return !ok || slices.Contains(offered, tier)
}

// dashTierOf is the tier of a text-to-video size ("" for a size no tier lists).
func dashTierOf(size string) string {
	for tier, list := range dashTierSizes {
		if slices.Contains(list, size) {
			return tier
		}
	}
	return ""
}

func newFakeDashScope(t *testing.T, key string) (*fakeDashScope, string) {
	f := &fakeDashScope{key: key, sizes: map[string]string{}}
	srv := startFake(t, f)
	return f, srv.URL + "/api/v1"
}

func (f *fakeDashScope) refuse(w http.ResponseWriter, status int, code, message string) {
	writeFakeJSON(w, status, map[string]string{"request_id": "req-fake", "code": code, "message": message})
}

func (f *fakeDashScope) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := f.log.record(r)
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		f.refuse(w, http.StatusUnauthorized, "InvalidApiKey", "Invalid API-key provided.")
		return
	}
	switch {
	case r.Method == http.MethodPost && (r.URL.Path == "/api/v1/services/aigc/video-generation/video-synthesis" ||
		r.URL.Path == "/api/v1/services/aigc/image2video/video-synthesis"):
		f.create(w, r, body)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/tasks/"):
		f.read(w, strings.TrimPrefix(r.URL.Path, "/api/v1/tasks/"))
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/v1/tasks/") && strings.HasSuffix(r.URL.Path, "/cancel"):
		f.cancel(w, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/tasks/"), "/cancel"))
	default:
		f.refuse(w, http.StatusNotFound, "NotFound", "the requested resource does not exist")
	}
}

func (f *fakeDashScope) create(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Header.Get("X-DashScope-Async") != "enable" {
		f.refuse(w, http.StatusForbidden, "AccessDenied", "current user api does not support synchronous calls")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", "Content-Type must be application/json")
		return
	}
	var c dashCreate
	if err := decodeStrict(body, &c); err != nil {
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", "the request body is invalid: "+err.Error())
		return
	}
	keyFrames := strings.Contains(r.URL.Path, "/image2video/")
	switch {
	case c.Model == "":
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", "Model not exist.")
		return
	case keyFrames && (c.Input.FirstFrameURL == "" || c.Input.LastFrameURL == "" || c.Input.ImgURL != ""):
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", "first_frame_url and last_frame_url are required")
		return
	case !keyFrames && (c.Input.FirstFrameURL != "" || c.Input.LastFrameURL != ""):
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", "first_frame_url is not a parameter of this model")
		return
	case c.Input.Prompt == "" && c.Input.ImgURL == "" && !keyFrames:
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", "input.prompt is required")
		return
	}
	size := "1920*1080"
	if p := c.Parameters; p != nil {
		switch {
		case p.Size != nil && !dashSize.MatchString(*p.Size):
			f.refuse(w, http.StatusBadRequest, "InvalidParameter", "size must be of the form width*height")
			return
		case p.Size != nil && (c.Input.ImgURL != "" || keyFrames):
			f.refuse(w, http.StatusBadRequest, "InvalidParameter", "size is a text-to-video parameter; use resolution")
			return
		case p.Size != nil && (dashTierOf(*p.Size) == "" || !dashOffers(c.Model, dashTierOf(*p.Size))):
			f.refuse(w, http.StatusBadRequest, "InvalidParameter", "size "+*p.Size+" is not supported by "+c.Model)
			return
		case p.Resolution != nil && !slices.Contains(dashResolution, *p.Resolution):
			f.refuse(w, http.StatusBadRequest, "InvalidParameter", "resolution must be 480P, 720P or 1080P")
			return
		case p.Resolution != nil && !dashOffers(c.Model, *p.Resolution):
			f.refuse(w, http.StatusBadRequest, "InvalidParameter", "resolution "+*p.Resolution+" is not supported by "+c.Model)
			return
		case p.Duration != nil && (*p.Duration < 2 || *p.Duration > 15):
			f.refuse(w, http.StatusBadRequest, "InvalidParameter", "duration must be between 2 and 15")
			return
		case p.Seed != nil && (*p.Seed < 0 || *p.Seed > 2147483647):
			f.refuse(w, http.StatusBadRequest, "InvalidParameter", "seed must be between 0 and 2147483647")
			return
		}
		if p.Size != nil {
			size = *p.Size
		}
	}
	id := f.tasks.add(func(n int) string { return fmt.Sprintf("0385dc79-5ff8-4d82-bcb6-%012d", n) }, fakeTask{script: scriptOf(c.Input.Prompt)})
	f.mu.Lock()
	f.sizes[id] = size
	f.mu.Unlock()
	writeFakeJSON(w, http.StatusOK, map[string]any{"request_id": "req-fake", "output": map[string]string{"task_id": id, "task_status": "PENDING"}})
}

func (f *fakeDashScope) read(w http.ResponseWriter, id string) {
	task, step, ok := f.tasks.step(id)
	output := map[string]any{"task_id": id, "task_status": "UNKNOWN"}
	if !ok {
		writeFakeJSON(w, http.StatusOK, map[string]any{"request_id": "req-fake", "output": output})
		return
	}
	if step == 0 {
		w.Header().Set("Retry-After", "2")
		f.refuse(w, http.StatusTooManyRequests, "Throttling.RateQuota", "Requests rate limit exceeded, please try again later.")
		return
	}
	answer := map[string]any{"request_id": "req-fake", "output": output}
	switch {
	case task.cancelled:
		output["task_status"] = "CANCELED"
	case task.script == scriptUnknown:
	case step == 1 || task.script == scriptSlow:
		output["task_status"] = "PENDING"
	case step == 2:
		output["task_status"] = "RUNNING"
	case task.script == scriptFail:
		output["task_status"], output["code"], output["message"] = "FAILED", "DataInspectionFailed", "Input data may contain inappropriate content."
	default:
		output["task_status"], output["video_url"] = "SUCCEEDED", "https://dashscope-result.example/"+id+".mp4?Expires=1&Signature=x"
		f.mu.Lock()
		size := f.sizes[id]
		f.mu.Unlock()
		answer["usage"] = map[string]any{"video_duration": 5, "video_ratio": size, "video_count": 1}
	}
	writeFakeJSON(w, http.StatusOK, answer)
}

func (f *fakeDashScope) cancel(w http.ResponseWriter, id string) {
	// Only a task still PENDING (never read past it, or one that stays PENDING) can be cancelled.
	pending := func(t fakeTask) bool { return t.reads <= 1 || t.script == scriptSlow }
	if !f.tasks.cancel(id, pending) {
		f.refuse(w, http.StatusBadRequest, "UnsupportedOperation", "Failed to cancel the task, please confirm if the task is in PENDING status.")
		return
	}
	writeFakeJSON(w, http.StatusOK, map[string]string{"request_id": "req-fake"})
}
