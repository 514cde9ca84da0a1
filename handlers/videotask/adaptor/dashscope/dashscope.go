// Package dashscope is the video task adaptor of Alibaba Cloud Model Studio (DashScope): Wan
// video synthesis, created asynchronously (X-DashScope-Async: enable) and read with
// GET /api/v1/tasks/{task_id}. The provider's base_url is the API's origin with its /api/v1
// prefix, e.g. https://dashscope-intl.aliyuncs.com/api/v1; the credential is a Bearer API key.
//
// Mapping (docs/video-providers.md has the table): the prompt goes to input.prompt, a negative
// prompt to input.negative_prompt; a first frame alone makes an image-to-video task (input.img_url,
// parameters.resolution), a first and a last frame a key-frame task (input.first_frame_url and
// input.last_frame_url, on the image2video endpoint); without frames a text-to-video task whose
// parameters.size is the pixel size of resolution × ratio. The resolution (default 720p) is
// always sent, as the nearest the model offers (tierOf). duration, seed, watermark and
// generate_audio (parameters.audio) are passed on; camera_fixed, frames, reference media and the
// other fields are ignored.
package dashscope

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// Endpoints, relative to the base URL (…/api/v1).
const (
	synthesisPath = "services/aigc/video-generation/video-synthesis"
	keyFramesPath = "services/aigc/image2video/video-synthesis"
	tasksPath     = "tasks/"
)

// asyncHeader is sent with every create: DashScope's video synthesis is asynchronous only.
var asyncHeader = http.Header{"X-Dashscope-Async": {"enable"}}

// Adaptor speaks DashScope's video synthesis protocol.
type Adaptor struct{}

// createBody is the create request body.
type createBody struct {
	Model      string         `json:"model"`
	Input      createInput    `json:"input"`
	Parameters map[string]any `json:"parameters"`
}

type createInput struct {
	Prompt         string `json:"prompt,omitempty"`
	NegativePrompt string `json:"negative_prompt,omitempty"`
	ImgURL         string `json:"img_url,omitempty"`
	FirstFrameURL  string `json:"first_frame_url,omitempty"`
	LastFrameURL   string `json:"last_frame_url,omitempty"`
}

// Create implements adaptor.Adaptor.
func (Adaptor) Create(ctx context.Context, c adaptor.Caller, r adaptor.Request) (string, error) {
	body := createBody{Model: r.Model, Input: createInput{Prompt: r.Prompt, NegativePrompt: r.NegativePrompt}, Parameters: map[string]any{}}
	path := synthesisPath
	first, hasFirst := r.Find(adaptor.RoleFirstFrame)
	last, hasLast := r.Find(adaptor.RoleLastFrame)
	switch {
	case hasFirst && hasLast:
		body.Input.FirstFrameURL, body.Input.LastFrameURL = first.URL, last.URL
		path = keyFramesPath
	case hasFirst:
		body.Input.ImgURL = first.URL
	}
	// The resolution is always sent, so that Wan's own default (1080P on most models) never
	// stands in for the contract's 720p; tierOf keeps it to one the model offers.
	if tier := tierOf(r); hasFirst {
		body.Parameters["resolution"] = strings.ToUpper(tier) // "720P"
	} else {
		body.Parameters["size"] = pixelSize(tier, r.Ratio)
	}
	if r.Duration > 0 {
		body.Parameters["duration"] = r.Duration
	}
	if r.Seed != nil && *r.Seed >= 0 {
		body.Parameters["seed"] = *r.Seed
	}
	if r.Watermark != nil {
		body.Parameters["watermark"] = *r.Watermark
	}
	if r.GenerateAudio != nil {
		body.Parameters["audio"] = *r.GenerateAudio
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	ans, err := c.Call(ctx, http.MethodPost, path, b, asyncHeader)
	if err != nil {
		return "", err
	}
	if !ans.OK() {
		return "", refusal(ans)
	}
	var created struct {
		Output struct {
			TaskID string `json:"task_id"`
		} `json:"output"`
	}
	if json.Unmarshal(ans.Body, &created) != nil || created.Output.TaskID == "" {
		return "", upstream.ErrUnreadable
	}
	return created.Output.TaskID, nil
}

// taskAnswer is what Read uses of the answer of GET /tasks/{task_id} (adaptor.DecodeAnswer):
// the status and the video's URL are needed; the failure's texts and the usage may be of any
// type (a length that is no number, or one past float64's range, 1e400, is not reported).
type taskAnswer struct {
	Output struct {
		TaskStatus string       `json:"task_status"`
		VideoURL   string       `json:"video_url"`
		Code       adaptor.Text `json:"code"`
		Message    adaptor.Text `json:"message"`
	} `json:"output"`
	Usage struct {
		VideoDuration adaptor.Number `json:"video_duration"`
		VideoRatio    adaptor.Text   `json:"video_ratio"`
		Duration      adaptor.Number `json:"duration"`
	} `json:"usage"`
}

// Read implements adaptor.Adaptor.
func (Adaptor) Read(ctx context.Context, c adaptor.Caller, id string, r adaptor.Request) (adaptor.State, error) {
	ans, err := c.Call(ctx, http.MethodGet, tasksPath+url.PathEscape(id), nil, nil)
	if err != nil {
		return adaptor.State{}, err
	}
	if !ans.OK() {
		return adaptor.State{}, adaptor.ReadError(ans, refusal)
	}
	var a taskAnswer
	if err := adaptor.DecodeAnswer(ans.Body, &a); err != nil {
		return adaptor.State{}, err
	}
	s := adaptor.State{ProviderStatus: a.Output.TaskStatus, Status: states.Of(a.Output.TaskStatus)}
	switch s.Status {
	case adaptor.StatusSucceeded:
		if a.Output.VideoURL == "" {
			s.Status = adaptor.StatusUnknown // succeeded without a video: not a state the reference has
			break
		}
		s.VideoURL = a.Output.VideoURL
		s.Duration = max(seconds(a.Usage.VideoDuration), seconds(a.Usage.Duration))
		if w, h, ok := adaptor.ParseSize(string(a.Usage.VideoRatio), "*"); ok {
			s.Resolution, s.Ratio = adaptor.Band(w, h), adaptor.Ratio(w, h)
			s.Usage.Width, s.Usage.Height = w, h
		}
		s.Usage.VideoSeconds, s.Usage.Resolution, s.Usage.Ratio, s.Usage.Requests = s.Duration, s.Resolution, s.Ratio, 1
		if s.Usage.Resolution == "" {
			s.Usage.Resolution = tierOf(r) // no size reported: billed at the tier asked for (Plan)
		}
	case adaptor.StatusFailed:
		s.ErrorCode, s.ErrorMessage = string(a.Output.Code), string(a.Output.Message)
	}
	return s, nil
}

// Plan implements adaptor.Planner: the resolution tierOf picks, which Create always sends (it
// can be above the one asked for: 1080p for 720p on a model of 480P and 1080P). The length is
// the request's, which Create sends as it is.
func (Adaptor) Plan(r adaptor.Request) billing.PlannedVideo {
	return billing.PlannedVideo{Resolution: tierOf(r)} // generate_audio is sent (parameters.audio)
}

// states maps DashScope's task_status onto the contract's states. UNKNOWN (the task's record is
// gone, or not yet there) and anything new are adaptor.StatusUnknown.
var states = adaptor.States{
	"PENDING":   adaptor.StatusQueued,
	"RUNNING":   adaptor.StatusRunning,
	"SUCCEEDED": adaptor.StatusSucceeded,
	"FAILED":    adaptor.StatusFailed,
	"CANCELED":  adaptor.StatusCancelled,
}

// Cancel implements adaptor.Adaptor: POST /tasks/{task_id}/cancel, which DashScope accepts for
// a PENDING task only. A finished task has nothing to delete upstream.
func (Adaptor) Cancel(ctx context.Context, c adaptor.Caller, id string) error {
	ans, err := c.Call(ctx, http.MethodPost, tasksPath+url.PathEscape(id)+"/cancel", nil, nil)
	if err != nil {
		return err
	}
	if !ans.OK() {
		return adaptor.ReadError(ans, refusal)
	}
	return nil
}

// Content implements adaptor.Adaptor: DashScope's video_url is a public (signed, short-lived)
// URL the client fetches itself.
func (Adaptor) Content(context.Context, adaptor.Caller, string) (*http.Response, error) {
	return nil, adaptor.ErrUnsupported
}

// refusal is a DashScope error answer: {"request_id","code","message"}.
func refusal(ans upstream.Answer) *apierror.Error {
	var e struct{ Code, Message string }
	_ = json.Unmarshal(ans.Body, &e) // an unreadable body keeps the generic message
	return adaptor.Refusal(ans, e.Code, e.Message)
}

// Interface guards
var (
	_ adaptor.Adaptor = Adaptor{}
	_ adaptor.Planner = Adaptor{}
)

// seconds is a usage length in whole seconds, the fraction dropped; 0 (not reported) when absent
// or not a positive number an int64 holds (see adaptor.WholeSeconds).
func seconds(n adaptor.Number) int64 {
	d, ok := n.Float()
	if !ok {
		return 0 // absent, or past float64's range
	}
	return adaptor.WholeSeconds(d, math.Trunc)
}
