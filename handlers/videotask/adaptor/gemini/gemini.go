// Package gemini is the video task adaptor of Veo through the Gemini API: a task is created with
// POST models/{model}:predictLongRunning ({"instances":[…],"parameters":{…}}) and followed by
// reading the long-running operation it returns until it is done. The provider's base_url is the
// API's versioned root, e.g. https://generativelanguage.googleapis.com/v1beta; the credential is
// the API key, sent as x-goog-api-key.
//
// The result is a file URI that only the operator's key can download: it never reaches the
// client. The task API answers with its own owner-only content endpoint instead, which streams
// the file through Content.
//
// Mapping (docs/video-providers.md has the table): the prompt goes to instances[0].prompt;
// ratio (16:9 or 9:16) to parameters.aspectRatio, resolution (720p, 1080p) to
// parameters.resolution, duration to parameters.durationSeconds (as a length the model makes,
// see durationSeconds) and a negative prompt to parameters.negativePrompt. Media references are
// ignored (the Gemini API takes images as inline bytes, and the gateway never fetches a client's
// media), as are seed, frames and the flags.
package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// Veo's defaults, which the usage of a task reports when the request left them open (the
// operation does not report the output's length or size).
const (
	defaultSeconds    = 8
	defaultResolution = "720p"
	defaultRatio      = "16:9"
)

// Adaptor speaks the Gemini API's Veo protocol.
type Adaptor struct{}

type createBody struct {
	Instances  []instance     `json:"instances"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

type instance struct {
	Prompt string `json:"prompt"`
}

// Create implements adaptor.Adaptor.
func (Adaptor) Create(ctx context.Context, c adaptor.Caller, r adaptor.Request) (string, error) {
	body := createBody{Instances: []instance{{Prompt: r.Prompt}}, Parameters: map[string]any{}}
	if r.Ratio == "16:9" || r.Ratio == "9:16" {
		body.Parameters["aspectRatio"] = r.Ratio
	}
	if r.Resolution == "720p" || r.Resolution == "1080p" {
		body.Parameters["resolution"] = r.Resolution
	}
	if seconds := durationSeconds(r.Model, r.Duration); seconds > 0 {
		body.Parameters["durationSeconds"] = seconds
	}
	if r.NegativePrompt != "" {
		body.Parameters["negativePrompt"] = r.NegativePrompt
	}
	if len(body.Parameters) == 0 {
		body.Parameters = nil
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	ans, err := c.Call(ctx, http.MethodPost, "models/"+url.PathEscape(r.Model)+":predictLongRunning", b, nil)
	if err != nil {
		return "", err
	}
	if !ans.OK() {
		return "", refusal(ans)
	}
	var op struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(ans.Body, &op) != nil || !validName(op.Name) {
		return "", upstream.ErrUnreadable
	}
	return op.Name, nil
}

// operation is what Read and Content use of a google.longrunning.Operation of a Veo task
// (adaptor.DecodeAnswer): done, the error's presence and the video's uri are needed; the
// error's texts and the filter's reasons may be of any type.
type operation struct {
	Done     bool `json:"done"`
	Error    *status
	Response *struct {
		GenerateVideoResponse *struct {
			GeneratedSamples []struct {
				Video struct {
					URI string `json:"uri"`
				} `json:"video"`
			} `json:"generatedSamples"`
			RAIMediaFilteredReasons []adaptor.Text `json:"raiMediaFilteredReasons"`
		} `json:"generateVideoResponse"`
	} `json:"response"`
}

// status is what is used of a google.rpc.Status: its texts.
type status struct {
	Message adaptor.Text `json:"message"`
	Status  adaptor.Text `json:"status"`
}

// readOperation reads the operation named id.
func readOperation(ctx context.Context, c adaptor.Caller, id string) (operation, error) {
	if !validName(id) {
		return operation{}, adaptor.ErrNotFound
	}
	ans, err := c.Call(ctx, http.MethodGet, escapeName(id), nil, nil)
	if err != nil {
		return operation{}, err
	}
	if !ans.OK() {
		return operation{}, adaptor.ReadError(ans, refusal)
	}
	var op operation
	if err := adaptor.DecodeAnswer(ans.Body, &op); err != nil {
		return operation{}, err
	}
	return op, nil
}

// Read implements adaptor.Adaptor. An operation not done is running (the Gemini API has no
// queued state); done with an error is failed; done with a video is succeeded; done with every
// video filtered by the safety filters is failed (content_filtered); done with neither is a
// state no rule maps.
func (Adaptor) Read(ctx context.Context, c adaptor.Caller, id string, r adaptor.Request) (adaptor.State, error) {
	op, err := readOperation(ctx, c, id)
	if err != nil {
		return adaptor.State{}, err
	}
	var s adaptor.State
	switch {
	case !op.Done:
		s.Status, s.ProviderStatus = adaptor.StatusRunning, "done=false"
	case op.Error != nil:
		s.Status, s.ProviderStatus = adaptor.StatusFailed, "error"
		s.ErrorCode, s.ErrorMessage = strings.ToLower(string(op.Error.Status)), string(op.Error.Message)
	case op.Response != nil && op.Response.GenerateVideoResponse != nil:
		v := op.Response.GenerateVideoResponse
		if len(v.GeneratedSamples) > 0 && v.GeneratedSamples[0].Video.URI != "" {
			s.Status, s.ProviderStatus = adaptor.StatusSucceeded, "done"
			s.VideoURL, s.Credentialed = v.GeneratedSamples[0].Video.URI, true
			s.Usage = usage(r)
			break
		}
		s.Status, s.ProviderStatus = adaptor.StatusFailed, "filtered"
		s.ErrorCode, s.ErrorMessage = "content_filtered", "the provider's safety filters removed the video"
		var reasons []string
		for _, r := range v.RAIMediaFilteredReasons {
			if r != "" {
				reasons = append(reasons, string(r))
			}
		}
		if len(reasons) > 0 {
			s.ErrorMessage += ": " + strings.Join(reasons, "; ")
		}
	default:
		s.Status, s.ProviderStatus = adaptor.StatusUnknown, "done without response"
	}
	return s, nil
}

// Plan implements adaptor.Planner: the length and resolution usage bills.
func (Adaptor) Plan(r adaptor.Request) billing.PlannedVideo {
	u := usage(r)
	return billing.PlannedVideo{Seconds: u.VideoSeconds, Resolution: u.Resolution, IgnoresAudio: true}
}

// usage is what a finished task is billed by: the requested length and size, or Veo's defaults
// (the operation reports neither).
func usage(r adaptor.Request) (u billing.Usage) {
	u.VideoSeconds, u.Resolution, u.Ratio, u.Requests = defaultSeconds, defaultResolution, defaultRatio, 1
	if seconds := durationSeconds(r.Model, r.Duration); seconds > 0 {
		u.VideoSeconds = seconds
	}
	if r.Resolution == "1080p" {
		u.Resolution = r.Resolution
	}
	if r.Ratio == "9:16" {
		u.Ratio = r.Ratio
	}
	return u
}

// veo3Seconds are the lengths Veo 3 models make.
var veo3Seconds = []int64{4, 6, 8}

// durationSeconds is the length the API is asked for, for a request's duration on model (0: none
// is sent, and Veo makes its default 8 s; so for a duration of -1 or none). Veo 3 models
// (veo-3.0-…, veo-3.1-…) make 4, 6 or 8 s and are asked for the nearest (the longer of two
// equally near: the contract's default 5 is 6, 15 is 8); Veo 2 models make 5 to 8 s and are asked
// for the duration brought into that range. Another model (a later Veo, or a name of the
// operator's upstream) is asked for the duration as given.
func durationSeconds(model string, duration int64) int64 {
	if duration <= 0 {
		return 0
	}
	switch name := strings.TrimPrefix(model, "models/"); {
	case strings.HasPrefix(name, "veo-3"):
		return adaptor.NearestLength(duration, veo3Seconds)
	case strings.HasPrefix(name, "veo-2"):
		return min(max(duration, 5), 8)
	}
	return duration
}

// Cancel implements adaptor.Adaptor: the Gemini API offers no cancel of a Veo operation.
func (Adaptor) Cancel(context.Context, adaptor.Caller, string) error { return adaptor.ErrUnsupported }

// Content implements adaptor.Adaptor: it opens the video's file URI that Locate finds with the
// operator's key (Caller.Open sends it to the upstream's own origin only).
func (a Adaptor) Content(ctx context.Context, c adaptor.Caller, id string) (*http.Response, error) {
	uri, err := a.Locate(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return c.Open(ctx, uri)
}

// Locate implements adaptor.Locator: it reads the operation again for its video's file URI.
func (Adaptor) Locate(ctx context.Context, c adaptor.Caller, id string) (string, error) {
	op, err := readOperation(ctx, c, id)
	if err != nil {
		return "", err
	}
	if !op.Done || op.Response == nil || op.Response.GenerateVideoResponse == nil ||
		len(op.Response.GenerateVideoResponse.GeneratedSamples) == 0 {
		return "", adaptor.ErrNotFound
	}
	return op.Response.GenerateVideoResponse.GeneratedSamples[0].Video.URI, nil
}

// validName accepts an operation name of the form the Gemini API returns,
// models/{model}/operations/{id} (or operations/{id}): segments without dot segments, so that
// reading it can only reach an operation under the upstream's base URL.
func validName(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || len(name) > 512 {
		return false
	}
	segs := strings.Split(name, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "?#\\") {
			return false
		}
	}
	return len(segs) >= 2 && segs[len(segs)-2] == "operations"
}

// escapeName path-escapes each segment of an operation name.
func escapeName(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// refusal is a Gemini API error answer: {"error":{"code","message","status"}}.
func refusal(ans upstream.Answer) *apierror.Error {
	var e struct{ Error status }
	_ = json.Unmarshal(ans.Body, &e) // an unreadable body keeps the generic message
	return adaptor.Refusal(ans, strings.ToLower(string(e.Error.Status)), string(e.Error.Message))
}

// Interface guards
var (
	_ adaptor.Adaptor = Adaptor{}
	_ adaptor.Locator = Adaptor{}
)
