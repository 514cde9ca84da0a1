// Package minimax is the video task adaptor of MiniMax's Hailuo video generation: a task is
// created with POST video_generation, read with GET query/video_generation?task_id=…, and its
// result is a file id, resolved through GET files/retrieve?file_id=… to a download address. The
// provider's base_url is the API's origin with /v1, e.g. https://api.minimax.io/v1; the
// credential is a Bearer API key. MiniMax answers most errors with HTTP 200 and a non-zero
// base_resp.status_code.
//
// The result needs the operator's key to resolve, so it never reaches the client: the task API
// answers with its owner-only content endpoint, which streams the file through Content.
//
// Mapping (docs/video-providers.md has the table): the prompt goes to prompt; a first frame to
// first_frame_image, a last frame to last_frame_image; duration 6 or 10 to duration; resolution
// 720p (768P) or 1080p (1080P) to resolution. Negative prompts, ratio, seed, frames and the flags
// are ignored.
package minimax

import (
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

// resolutions are MiniMax's resolutions by the contract's.
var resolutions = map[string]string{"720p": "768P", "1080p": "1080P"}

// states maps MiniMax's status onto the contract's states.
var states = adaptor.States{
	"Preparing":  adaptor.StatusQueued,
	"Queueing":   adaptor.StatusQueued,
	"Processing": adaptor.StatusRunning,
	"Success":    adaptor.StatusSucceeded,
	"Fail":       adaptor.StatusFailed,
}

// Adaptor speaks MiniMax's video generation protocol.
type Adaptor struct{}

type createBody struct {
	Model           string `json:"model"`
	Prompt          string `json:"prompt,omitempty"`
	FirstFrameImage string `json:"first_frame_image,omitempty"`
	LastFrameImage  string `json:"last_frame_image,omitempty"`
	Duration        int64  `json:"duration,omitempty"`
	Resolution      string `json:"resolution,omitempty"`
}

// baseResp is the status every MiniMax answer carries.
type baseResp struct {
	BaseResp struct {
		StatusCode int          `json:"status_code"`
		StatusMsg  adaptor.Text `json:"status_msg"`
	} `json:"base_resp"`
}

// Create implements adaptor.Adaptor.
func (Adaptor) Create(ctx context.Context, c adaptor.Caller, r adaptor.Request) (string, error) {
	body := createBody{Model: r.Model, Prompt: r.Prompt, Resolution: resolutions[r.Resolution]}
	if first, ok := r.Find(adaptor.RoleFirstFrame); ok {
		body.FirstFrameImage = first.URL
	}
	if last, ok := r.Find(adaptor.RoleLastFrame); ok {
		body.LastFrameImage = last.URL
	}
	if r.Duration == 6 || r.Duration == 10 {
		body.Duration = secondsOf(r)
	}
	// Any other length is not sent: MiniMax makes its default, 6 s (see secondsOf).
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	var created struct {
		baseResp
		TaskID string `json:"task_id"`
	}
	if err := call(ctx, c, http.MethodPost, "video_generation", b, &created); err != nil {
		return "", err
	}
	if created.TaskID == "" {
		return "", upstream.ErrUnreadable
	}
	return created.TaskID, nil
}

// Read implements adaptor.Adaptor.
func (Adaptor) Read(ctx context.Context, c adaptor.Caller, id string, r adaptor.Request) (adaptor.State, error) {
	var a struct {
		baseResp
		Status      string         `json:"status"`
		FileID      string         `json:"file_id"`
		VideoWidth  adaptor.Number `json:"video_width"`
		VideoHeight adaptor.Number `json:"video_height"`
	}
	if err := call(ctx, c, http.MethodGet, "query/video_generation?task_id="+url.QueryEscape(id), nil, &a); err != nil {
		return adaptor.State{}, err
	}
	s := adaptor.State{ProviderStatus: a.Status, Status: states.Of(a.Status)}
	switch s.Status {
	case adaptor.StatusSucceeded:
		if a.FileID == "" {
			s.Status = adaptor.StatusUnknown // succeeded without a file: not a state the reference has
			break
		}
		s.Credentialed = true // the content endpoint resolves the file id
		s.Usage.Requests, s.Usage.VideoSeconds = 1, secondsOf(r)
		if w, h := pixels(a.VideoWidth), pixels(a.VideoHeight); w > 0 && h > 0 {
			s.Usage.Width, s.Usage.Height = w, h
			s.Resolution, s.Ratio = adaptor.Band(w, h), adaptor.Ratio(w, h)
			s.Usage.Resolution, s.Usage.Ratio = s.Resolution, s.Ratio
		}
	case adaptor.StatusFailed:
		s.ErrorCode, s.ErrorMessage = "generation_failed", "the provider reported the task failed"
	}
	return s, nil
}

// secondsOf is the length MiniMax makes for r: 10 s when asked for, except at 1080P, where it
// makes 6 s only (and refuses 10), else its default 6 (a length other than 6 or 10 is not sent).
func secondsOf(r adaptor.Request) int64 {
	if r.Duration == 10 && resolutions[r.Resolution] != "1080P" {
		return 10
	}
	return 6
}

// Plan implements adaptor.Planner: secondsOf's length, at 1080p when asked for, else at MiniMax's
// default 768P (the contract's 720p band; a resolution MiniMax does not offer is not sent).
func (Adaptor) Plan(r adaptor.Request) billing.PlannedVideo {
	p := billing.PlannedVideo{Seconds: secondsOf(r), Resolution: "720p", IgnoresAudio: true}
	if r.Resolution == "1080p" {
		p.Resolution = r.Resolution
	}
	return p
}

// Cancel implements adaptor.Adaptor: MiniMax offers no cancel.
func (Adaptor) Cancel(context.Context, adaptor.Caller, string) error { return adaptor.ErrUnsupported }

// Content implements adaptor.Adaptor: it opens (without the key) the address Locate finds.
func (a Adaptor) Content(ctx context.Context, c adaptor.Caller, id string) (*http.Response, error) {
	address, err := a.Locate(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return c.Open(ctx, address)
}

// Locate implements adaptor.Locator: it reads the task again and resolves its file id to the
// file's download address with the operator's key.
func (Adaptor) Locate(ctx context.Context, c adaptor.Caller, id string) (string, error) {
	var q struct {
		baseResp
		Status string `json:"status"`
		FileID string `json:"file_id"`
	}
	if err := call(ctx, c, http.MethodGet, "query/video_generation?task_id="+url.QueryEscape(id), nil, &q); err != nil {
		return "", err
	}
	if q.Status != "Success" || q.FileID == "" {
		return "", adaptor.ErrNotFound
	}
	var f struct {
		baseResp
		File struct {
			DownloadURL string `json:"download_url"`
		} `json:"file"`
	}
	if err := call(ctx, c, http.MethodGet, "files/retrieve?file_id="+url.QueryEscape(q.FileID), nil, &f); err != nil {
		return "", err
	}
	if f.File.DownloadURL == "" {
		return "", upstream.ErrUnreadable
	}
	return f.File.DownloadURL, nil
}

// call makes one call and decodes its answer into out, whose baseResp it checks: a non-2xx
// status or a non-zero status_code is the provider's refusal.
func call(ctx context.Context, c adaptor.Caller, method, rel string, body []byte, out interface{ status() (int, string) }) error {
	ans, err := c.Call(ctx, method, rel, body, nil)
	if err != nil {
		return err
	}
	if !ans.OK() {
		return adaptor.ReadError(ans, refusal)
	}
	if err := adaptor.DecodeAnswer(ans.Body, out); err != nil {
		return err
	}
	if code, _ := out.status(); code != 0 {
		ans.Status = statusOf(code)
		return adaptor.ReadError(ans, refusal)
	}
	return nil
}

func (b *baseResp) status() (int, string) {
	return b.BaseResp.StatusCode, string(b.BaseResp.StatusMsg)
}

// pixels is a reported width or height in whole pixels; 0 (not reported) when absent or not a
// whole positive number.
func pixels(n adaptor.Number) int64 {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

// statusOf is the HTTP status a base_resp.status_code stands for: 1002 (rate limit) is 429; 1004
// (authentication) 401 and 1008 (the operator's balance) 502, the gateway's problems, not the
// client's; anything else 400.
func statusOf(code int) int {
	switch code {
	case 1002:
		return http.StatusTooManyRequests
	case 1004:
		return http.StatusUnauthorized
	case 1008:
		return http.StatusBadGateway
	}
	return http.StatusBadRequest
}

// refusal is a MiniMax error answer: base_resp.status_code and status_msg, the code kept as
// "minimax_<code>".
func refusal(ans upstream.Answer) *apierror.Error {
	var e baseResp
	_ = json.Unmarshal(ans.Body, &e) // an unreadable body keeps the generic message
	code := ""
	if e.BaseResp.StatusCode != 0 {
		code = "minimax_" + strconv.Itoa(e.BaseResp.StatusCode)
	}
	return adaptor.Refusal(ans, code, string(e.BaseResp.StatusMsg))
}

// Interface guards
var (
	_ adaptor.Adaptor = Adaptor{}
	_ adaptor.Locator = Adaptor{}
)
