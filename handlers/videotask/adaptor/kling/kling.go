// Package kling is the video task adaptor of Kling's API: text-to-video
// (POST videos/text2video) and image-to-video (POST videos/image2video), each task read by its
// id (GET videos/{kind}/{task_id}). The provider's base_url is the API's origin with /v1, e.g.
// https://api-singapore.klingai.com/v1. The credential is an access key and a secret key: each
// request carries a JWT (HS256, iss the access key, 30 minutes), renewed before it expires (see
// providers.AuthKlingJWT).
//
// Mapping (docs/video-providers.md has the table): the prompt goes to prompt, a negative prompt
// to negative_prompt; a first frame makes an image-to-video task (image, and image_tail for a
// last frame); resolution 720p is mode std, 1080p mode pro; ratio 16:9, 9:16 or 1:1 is
// aspect_ratio (text-to-video only); duration to duration (a string), as the nearest of the 5 or
// 10 s Kling makes (secondsOf). Seed, frames, the flags and reference media are ignored.
package kling

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// The kinds of task, each its own endpoint; a task's upstream id is "{kind}/{task_id}".
const (
	textToVideo  = "text2video"
	imageToVideo = "image2video"
)

// modes are Kling's generation modes by the contract's resolution.
var modes = map[string]string{"720p": "std", "1080p": "pro"}

// Adaptor speaks Kling's video task protocol.
type Adaptor struct{}

type createBody struct {
	ModelName      string `json:"model_name"`
	Prompt         string `json:"prompt,omitempty"`
	NegativePrompt string `json:"negative_prompt,omitempty"`
	Image          string `json:"image,omitempty"`
	ImageTail      string `json:"image_tail,omitempty"`
	Mode           string `json:"mode,omitempty"`
	AspectRatio    string `json:"aspect_ratio,omitempty"`
	Duration       string `json:"duration,omitempty"`
}

// Create implements adaptor.Adaptor.
func (Adaptor) Create(ctx context.Context, c adaptor.Caller, r adaptor.Request) (string, error) {
	body := createBody{ModelName: r.Model, Prompt: r.Prompt, NegativePrompt: r.NegativePrompt, Mode: modes[r.Resolution]}
	kind := textToVideo
	if first, ok := r.Find(adaptor.RoleFirstFrame); ok {
		kind, body.Image = imageToVideo, first.URL
		if last, ok := r.Find(adaptor.RoleLastFrame); ok {
			body.ImageTail = last.URL
		}
	} else if r.Ratio == "16:9" || r.Ratio == "9:16" || r.Ratio == "1:1" {
		body.AspectRatio = r.Ratio
	}
	if r.Duration > 0 {
		body.Duration = strconv.FormatInt(secondsOf(r), 10)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	ans, err := c.Call(ctx, http.MethodPost, "videos/"+kind, b, nil)
	if err != nil {
		return "", err
	}
	if !ans.OK() {
		return "", refusal(ans)
	}
	var created struct {
		Code int `json:"code"`
		Data struct {
			TaskID string `json:"task_id"`
		} `json:"data"`
	}
	if json.Unmarshal(ans.Body, &created) != nil {
		return "", upstream.ErrUnreadable
	}
	if created.Code != 0 {
		return "", refusal(ans)
	}
	if created.Data.TaskID == "" || strings.ContainsAny(created.Data.TaskID, "/?#") {
		return "", upstream.ErrUnreadable
	}
	return kind + "/" + created.Data.TaskID, nil
}

// taskAnswer is what Read uses of a task read's answer (adaptor.DecodeAnswer): the code, the
// status and the video's url are needed; the failure's message and the video's duration (a
// string in the reference, a number taken too) may be of any type.
type taskAnswer struct {
	Code int `json:"code"`
	Data struct {
		TaskStatus    string       `json:"task_status"`
		TaskStatusMsg adaptor.Text `json:"task_status_msg"`
		TaskResult    struct {
			Videos []struct {
				URL      string         `json:"url"`
				Duration adaptor.Number `json:"duration"`
			} `json:"videos"`
		} `json:"task_result"`
	} `json:"data"`
}

// Read implements adaptor.Adaptor.
func (Adaptor) Read(ctx context.Context, c adaptor.Caller, id string, r adaptor.Request) (adaptor.State, error) {
	kind, taskID, ok := strings.Cut(id, "/")
	if !ok || kind != textToVideo && kind != imageToVideo {
		return adaptor.State{}, adaptor.ErrNotFound
	}
	ans, err := c.Call(ctx, http.MethodGet, "videos/"+kind+"/"+url.PathEscape(taskID), nil, nil)
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
	if a.Code != 0 {
		return adaptor.State{}, refusal(ans)
	}
	s := adaptor.State{ProviderStatus: a.Data.TaskStatus, Status: states.Of(a.Data.TaskStatus)}
	switch s.Status {
	case adaptor.StatusSucceeded:
		if len(a.Data.TaskResult.Videos) == 0 || a.Data.TaskResult.Videos[0].URL == "" {
			s.Status = adaptor.StatusUnknown // succeeded without a video: not a state the reference has
			break
		}
		v := a.Data.TaskResult.Videos[0]
		s.VideoURL = v.URL
		if d, ok := v.Duration.Float(); ok {
			s.Duration = adaptor.WholeSeconds(d, math.Round) // 0 (not reported) unless a usable length
		}
		// Kling reports no size: the resolution is the mode's the task ran in (std by default).
		s.Usage.VideoSeconds, s.Usage.Resolution, s.Usage.Requests = s.Duration, resolutionOf(r), 1
	case adaptor.StatusFailed:
		s.ErrorCode, s.ErrorMessage = "generation_failed", string(a.Data.TaskStatusMsg)
	}
	return s, nil
}

// resolutionOf is the resolution of the mode a task runs in: the one asked for where Kling has a
// mode for it, else std's 720p (no mode is sent, and Kling runs std).
func resolutionOf(r adaptor.Request) string {
	if modes[r.Resolution] != "" {
		return r.Resolution
	}
	return "720p"
}

// Plan implements adaptor.Planner: secondsOf's length, in the mode resolutionOf tells.
func (Adaptor) Plan(r adaptor.Request) billing.PlannedVideo {
	return billing.PlannedVideo{Seconds: secondsOf(r), Resolution: resolutionOf(r), IgnoresAudio: true}
}

// offeredSeconds are the lengths Kling makes.
var offeredSeconds = []int64{5, 10}

// secondsOf is the length Kling is asked for and makes: the nearest of 5 and 10 s to the
// duration (the longer of two equally near: 8 is 10, 7 is 5), or its default 5 s where the
// duration is -1 or none (nothing is sent then).
func secondsOf(r adaptor.Request) int64 {
	if r.Duration <= 0 {
		return 5
	}
	return adaptor.NearestLength(r.Duration, offeredSeconds)
}

// states maps Kling's task_status onto the contract's states; anything else is
// adaptor.StatusUnknown.
var states = adaptor.States{
	"submitted":  adaptor.StatusQueued,
	"processing": adaptor.StatusRunning,
	"succeed":    adaptor.StatusSucceeded,
	"failed":     adaptor.StatusFailed,
}

// Cancel implements adaptor.Adaptor: Kling offers no cancel.
func (Adaptor) Cancel(context.Context, adaptor.Caller, string) error { return adaptor.ErrUnsupported }

// Content implements adaptor.Adaptor: Kling's video URL is public.
func (Adaptor) Content(context.Context, adaptor.Caller, string) (*http.Response, error) {
	return nil, adaptor.ErrUnsupported
}

// refusal is a Kling error answer: {"code":<number>,"message","request_id"}; the code is kept
// as "kling_<code>".
func refusal(ans upstream.Answer) *apierror.Error {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(ans.Body, &e) // an unreadable body keeps the generic message
	code := ""
	if e.Code != 0 {
		code = "kling_" + strconv.Itoa(e.Code)
	}
	if ans.OK() { // an error code in a 200 answer: the provider refused the request
		ans.Status = http.StatusBadRequest
	}
	return adaptor.Refusal(ans, code, e.Message)
}

// Interface guards
var _ adaptor.Adaptor = Adaptor{}
