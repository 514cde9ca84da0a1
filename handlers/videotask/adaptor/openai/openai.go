// Package openai is the video task adaptor of an upstream that serves OpenAI's videos API (Sora,
// or another gateway offering the same /v1/videos): a task is created with POST videos (a JSON
// body), read with GET videos/{video_id}, its video downloaded with GET
// videos/{video_id}/content and a finished one deleted with DELETE videos/{video_id}. The
// provider's base_url is the API's versioned root, e.g. https://api.openai.com/v1; the
// credential is a Bearer API key.
//
// The content endpoint needs the operator's key, so the result never reaches the client: the
// task API answers with its own owner-only content endpoint, which streams the video through
// Content.
//
// Mapping (docs/video-providers.md has the table): the prompt goes to prompt; a first frame to
// input_reference.image_url; duration to seconds (a string), as the nearest of the 4, 8 or 12
// the API takes (secondsOf); resolution 720p or 1080p with ratio 16:9 or 9:16 to size (1280x720,
// 720x1280, 1792x1024, 1024x1792; a resolution or ratio not given is the contract's default,
// 720p or 16:9). Negative prompts, seed, frames, the flags, a last frame and reference media are
// ignored. The video's states are queued, in_progress, completed and failed; its seconds and size
// give the actual duration, resolution and ratio.
package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// videosPath is the videos collection, relative to the base URL (…/v1).
const videosPath = "videos"

// defaultSeconds is the length of a video whose request gave none (the API's default, "4").
const defaultSeconds = 4

// states maps a video's status onto the contract's states.
var states = adaptor.States{
	"queued":      adaptor.StatusQueued,
	"in_progress": adaptor.StatusRunning,
	"completed":   adaptor.StatusSucceeded,
	"failed":      adaptor.StatusFailed,
}

// sizes are the API's sizes by the contract's resolution and ratio.
var sizes = map[[2]string]string{
	{"720p", "16:9"}:  "1280x720",
	{"720p", "9:16"}:  "720x1280",
	{"1080p", "16:9"}: "1792x1024",
	{"1080p", "9:16"}: "1024x1792",
}

// sizeNames are the contract's resolution and ratio of each of the API's sizes.
var sizeNames = func() map[string][2]string {
	names := make(map[string][2]string, len(sizes))
	for name, size := range sizes {
		names[size] = name
	}
	return names
}()

// Adaptor speaks OpenAI's videos protocol.
type Adaptor struct{}

// createBody is the JSON create body.
type createBody struct {
	Model          string    `json:"model"`
	Prompt         string    `json:"prompt"`
	InputReference *imageRef `json:"input_reference,omitempty"`
	Seconds        string    `json:"seconds,omitempty"`
	Size           string    `json:"size,omitempty"`
}

// imageRef references an input image by URL (the API also takes an uploaded file's id).
type imageRef struct {
	ImageURL string `json:"image_url"`
}

// video is the video object the API answers with.
type video struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Progress int    `json:"progress"`
	Seconds  string `json:"seconds"`
	Size     string `json:"size"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// videoState is what Read uses of a video object (adaptor.DecodeAnswer): the status is needed;
// the length (a string in the reference, a number taken too), the size and the error's texts
// may be of any type.
type videoState struct {
	Status  string         `json:"status"`
	Seconds adaptor.Number `json:"seconds"`
	Size    adaptor.Text   `json:"size"`
	Error   *struct {
		Code    adaptor.Text `json:"code"`
		Message adaptor.Text `json:"message"`
	} `json:"error"`
}

// Create implements adaptor.Adaptor.
func (Adaptor) Create(ctx context.Context, c adaptor.Caller, r adaptor.Request) (string, error) {
	body := createBody{Model: r.Model, Prompt: r.Prompt, Size: sizeOf(r.Resolution, r.Ratio)}
	if first, ok := r.Find(adaptor.RoleFirstFrame); ok {
		body.InputReference = &imageRef{ImageURL: first.URL}
	}
	if r.Duration > 0 { // -1 (and 0) leave the length to the model: its default 4 s
		body.Seconds = strconv.FormatInt(secondsOf(r.Duration), 10)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	ans, err := c.Call(ctx, http.MethodPost, videosPath, b, nil)
	if err != nil {
		return "", err
	}
	if !ans.OK() {
		return "", refusal(ans)
	}
	var v video
	if json.Unmarshal(ans.Body, &v) != nil || v.ID == "" {
		return "", upstream.ErrUnreadable
	}
	return v.ID, nil
}

// sizeOf is the API's size of a resolution and ratio; "" (the model's default) for others. One
// not given is the contract's default (720p, 16:9), since the API's own default size is
// portrait (720x1280) and the task must be what the gateway answers for it.
func sizeOf(resolution, ratio string) string {
	resolution, ratio = cmp.Or(resolution, billing.DefaultResolution), cmp.Or(ratio, billing.DefaultRatio)
	return sizes[[2]string{resolution, ratio}]
}

// Read implements adaptor.Adaptor.
func (Adaptor) Read(ctx context.Context, c adaptor.Caller, id string, r adaptor.Request) (adaptor.State, error) {
	ans, err := c.Call(ctx, http.MethodGet, videosPath+"/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return adaptor.State{}, err
	}
	if !ans.OK() {
		return adaptor.State{}, adaptor.ReadError(ans, refusal)
	}
	var v videoState
	if err := adaptor.DecodeAnswer(ans.Body, &v); err != nil {
		return adaptor.State{}, err
	}
	s := adaptor.State{ProviderStatus: v.Status, Status: states.Of(v.Status)}
	if n, err := strconv.ParseInt(string(v.Seconds), 10, 64); err == nil && n > 0 {
		s.Duration = n
	}
	if w, h, ok := adaptor.ParseSize(string(v.Size), "x"); ok {
		s.Resolution, s.Ratio = adaptor.Band(w, h), adaptor.Ratio(w, h)
		if named, ok := sizeNames[string(v.Size)]; ok {
			s.Resolution, s.Ratio = named[0], named[1] // the larger sizes are the API's 1080p
		}
		s.Usage.Width, s.Usage.Height = w, h
	}
	switch s.Status {
	case adaptor.StatusSucceeded:
		// The content endpoint takes the operator's key: the task API serves it to the owner.
		s.VideoURL, s.Credentialed = contentPath(id), true
		s.Usage = usage(s, r)
	case adaptor.StatusFailed:
		if v.Error != nil {
			s.ErrorCode, s.ErrorMessage = string(v.Error.Code), string(v.Error.Message)
		}
	}
	return s, nil
}

// offeredSeconds are the lengths the API takes, shortest first.
var offeredSeconds = []int64{4, 8, 12}

// secondsOf is the length the API is asked for, for a request's duration: the offered length
// nearest to it, the longer of two equally near (the contract's default 5 is 4; 6 is 8, 10 is 12,
// 13 to 15 are 12). A duration of -1 or 0 (the model chooses) sends none, and the API makes its
// default, 4 s.
func secondsOf(duration int64) int64 {
	if duration <= 0 {
		return defaultSeconds
	}
	return adaptor.NearestLength(duration, offeredSeconds)
}

// Plan implements adaptor.Planner: secondsOf's length, the one sent (or the API's default 4 s
// where none is). The picture is the one asked for (the contract's default when not given), or
// the model's default size where sizeOf names none, which is not known here.
func (Adaptor) Plan(r adaptor.Request) billing.PlannedVideo {
	return billing.PlannedVideo{Seconds: secondsOf(r.Duration), IgnoresAudio: true}
}

// usage is what a finished video is billed by: its reported length and size, else the length
// the create asked for (the API's default when it sent none).
func usage(s adaptor.State, r adaptor.Request) billing.Usage {
	u := s.Usage
	u.Requests, u.VideoSeconds, u.Resolution, u.Ratio = 1, s.Duration, s.Resolution, s.Ratio
	if u.VideoSeconds == 0 {
		u.VideoSeconds = secondsOf(r.Duration)
	}
	return u
}

// contentPath is the endpoint of a video's content, relative to the base URL.
func contentPath(id string) string { return videosPath + "/" + url.PathEscape(id) + "/content" }

// Cancel implements adaptor.Adaptor: the API cannot stop a video being generated.
func (Adaptor) Cancel(context.Context, adaptor.Caller, string) error { return adaptor.ErrUnsupported }

// Delete implements adaptor.Deleter: DELETE videos/{video_id} removes a finished video and its
// assets upstream.
func (Adaptor) Delete(ctx context.Context, c adaptor.Caller, id string) error {
	ans, err := c.Call(ctx, http.MethodDelete, videosPath+"/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return err
	}
	if !ans.OK() {
		return adaptor.ReadError(ans, refusal)
	}
	return nil
}

// Content implements adaptor.Adaptor: it opens the video's content endpoint with the operator's
// key (the upstream's own origin; never sent across a redirect to storage).
func (Adaptor) Content(ctx context.Context, c adaptor.Caller, id string) (*http.Response, error) {
	return c.Open(ctx, contentPath(id))
}

// refusal is an OpenAI error answer: {"error":{"message","type","param","code"}}; the code, or
// the type when the code is null.
func refusal(ans upstream.Answer) *apierror.Error {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(ans.Body, &e) // an unreadable body keeps the generic message
	code, _ := e.Error.Code.(string)
	if code == "" {
		code = e.Error.Type
	}
	return adaptor.Refusal(ans, code, e.Error.Message)
}

// Interface guards
var (
	_ adaptor.Adaptor = Adaptor{}
	_ adaptor.Deleter = Adaptor{}
)
