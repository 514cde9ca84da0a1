package videotask

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// VideoRequest is a create request of the OpenAI-style video API (POST /v1/videos), as the front
// read it from a JSON or multipart/form-data body. Its fields are strings as the client sent
// them; ArkBody checks and maps them.
type VideoRequest struct {
	Model  string
	Prompt string
	// Seconds is the clip length, an integer as a string ("4"); empty when not given.
	Seconds string
	// Size is width x height in pixels ("1280x720"); empty when not given.
	Size string
	// InputReference is the public URL of an image that serves as the first frame.
	InputReference string
	// CallbackURL is mediagw's extension: the address that receives the task's status changes,
	// as on the task API (spec §6).
	CallbackURL string
	// given marks the members the client sent (JSON null counts as absent), so that an empty
	// one is refused as the value it is, never taken as absent: an empty input_reference is
	// no image, and a video made without it would be charged as the text-only one not asked for.
	given map[string]bool
}

// give notes that the member name was sent with the value s.
func (v *VideoRequest) give(name, s string) {
	if v.given == nil {
		v.given = make(map[string]bool, len(videoFields))
	}
	v.given[name] = true
	*v.textField(name) = s
}

// optionalFields are the members that may be left out, and what an empty one is refused with.
var optionalFields = []struct{ name, want string }{
	{"seconds", "must be a whole number of seconds from 1 to 15, such as \"4\""},
	{"size", "must be width x height in pixels, such as 1280x720"},
	{"input_reference", "must be a public URL of an image, or left out"},
	{"callback_url", "must be a URL, or left out"},
}

// emptyOptional is the error for an optional member sent empty, or nil.
func (v VideoRequest) emptyOptional() error {
	for _, f := range optionalFields {
		if v.given[f.name] && *v.textField(f.name) == "" {
			return frontInvalid(f.name, "is empty: it %s", f.want)
		}
	}
	return nil
}

// videoFields are the members of a create body; any other is refused, as OpenAI refuses an
// unknown parameter, since nothing but these reaches the upstream.
var videoFields = []string{"model", "prompt", "seconds", "size", "input_reference", "callback_url"}

// errPresign answers a file in a create request: file bytes never pass through the gateway.
var errPresign = apierror.New(400, "file_upload_not_accepted",
	"file uploads are not accepted here: upload the image with POST /v1/upload/presign, PUT it to the returned url, "+
		`and send its public_url as input_reference ({"image_url": "<public_url>"})`).WithParam("input_reference")

// frontInvalid is a 400 invalid_request_error naming a field of the OpenAI-style request.
func frontInvalid(field, format string, a ...any) *apierror.Error {
	return apierror.New(400, "invalid_request", field+" "+fmt.Sprintf(format, a...)).WithParam(field)
}

// ParseVideoJSON reads a JSON create body. JSON null counts as an absent member;
// input_reference is a URL string or an object {"image_url": URL}. A file_id is refused (files
// are not kept by the gateway), as is any member not in the OpenAI reference, and a body that is
// not UTF-8 (as the task API refuses it: decoded, its bytes would reach the upstream as U+FFFD).
func ParseVideoJSON(body []byte) (VideoRequest, error) {
	var v VideoRequest
	if !utf8.Valid(body) {
		return v, apierror.NotUTF8("invalid_request_body")
	}
	fields, err := jsonkeys.All(body, videoFields...)
	if errors.Is(err, jsonkeys.ErrNotObject) {
		return v, apierror.NotJSONObject("invalid_request_body")
	} else if err != nil {
		return v, keyError(err, "")
	}
	for k, raw := range fields {
		if isNull(raw) {
			continue
		}
		switch k {
		case "seconds":
			s, ok := jsonString(raw)
			if n, isInt := integer(raw); isInt {
				s, ok = strconv.FormatInt(n, 10), true
			}
			if !ok {
				return v, frontInvalid(k, "must be a string such as \"4\"")
			}
			v.give(k, s)
		case "input_reference":
			s, err := inputReference(raw)
			if err != nil {
				return v, err
			}
			v.give(k, s)
		case "model", "prompt", "size", "callback_url":
			s, ok := jsonString(raw)
			if !ok {
				return v, frontInvalid(k, "must be a string")
			}
			v.give(k, s)
		default:
			return v, frontInvalid(k, "is not a parameter of this endpoint (accepted: %s)", strings.Join(videoFields, ", "))
		}
	}
	return v, nil
}

// textField is the field of a string member of the request (model, prompt, seconds, size,
// input_reference, callback_url), or nil for another name.
func (v *VideoRequest) textField(name string) *string {
	switch name {
	case "model":
		return &v.Model
	case "prompt":
		return &v.Prompt
	case "seconds":
		return &v.Seconds
	case "size":
		return &v.Size
	case "input_reference":
		return &v.InputReference
	case "callback_url":
		return &v.CallbackURL
	}
	return nil
}

// inputReference reads input_reference: a URL string, or {"image_url": URL}; another member of
// the object is refused, naming it.
func inputReference(raw json.RawMessage) (string, error) {
	if s, ok := jsonString(raw); ok {
		return s, nil
	}
	m, err := jsonkeys.All(raw, "image_url", "file_id") // every member, not only these
	if err != nil || m == nil {
		return "", frontInvalid("input_reference", `must be a URL or an object {"image_url": "<public URL>"}`)
	}
	if _, ok := m["file_id"]; ok {
		return "", errPresign
	}
	for k := range m {
		if k != "image_url" {
			// As a form's input_reference[<name>] part is: nothing else of it reaches the
			// upstream, so nothing else is taken silently.
			return "", frontInvalid("input_reference."+k, "is not a member of input_reference (accepted: image_url)")
		}
	}
	s, ok := jsonString(m["image_url"])
	if !ok {
		return "", frontInvalid("input_reference", `must be a URL or an object {"image_url": "<public URL>"}`)
	}
	return s, nil
}

// ArkBody maps the request onto the task API's create body (spec §2.2), which the one create
// path then checks (ParseCreate): prompt → a text item; input_reference → an image_url item with
// the role first_frame; seconds → duration; size → resolution and ratio (SizeToArk). The last
// frame is always asked for, so that a thumbnail can be served where the model makes one.
func (v VideoRequest) ArkBody() ([]byte, error) {
	if v.Model == "" { // named first, as the task API does: a body without anything lacks a model
		return nil, errMissingModel
	}
	if v.Prompt == "" {
		return nil, frontInvalid("prompt", "is required and must not be empty")
	}
	if err := v.emptyOptional(); err != nil {
		return nil, err
	}
	content := []map[string]any{{"type": "text", "text": v.Prompt}}
	if v.InputReference != "" {
		content = append(content, map[string]any{"type": "image_url", "image_url": map[string]string{"url": v.InputReference}, "role": "first_frame"})
	}
	body := map[string]any{"model": v.Model, "content": content, "return_last_frame": true}
	if v.Seconds != "" {
		n, err := strconv.ParseInt(v.Seconds, 10, 64)
		if err != nil || n < 1 || n > 15 {
			return nil, frontInvalid("seconds", "must be a whole number of seconds from 1 to 15, such as \"4\"")
		}
		body["duration"] = n
	}
	if v.Size != "" {
		resolution, ratio, err := SizeToArk(v.Size)
		if err != nil {
			return nil, err
		}
		body["resolution"], body["ratio"] = resolution, ratio
	}
	if v.CallbackURL != "" {
		body["callback_url"] = v.CallbackURL
	}
	return apierror.Marshal(body)
}

// frontParams names, for a field of the task API's create body that ArkBody wrote, the field of
// the OpenAI-style request it came from; errors name the client's fields.
var frontParams = map[string]string{
	"content": "prompt", "content[0].text": "prompt", "content[1].image_url.url": "input_reference",
	"content[1].image_url": "input_reference", "duration": "seconds", "resolution": "size", "ratio": "size",
}

// frontError makes an error of the create path speak of the client's request: a field of the
// task API's body is named as the OpenAI-style field it came from.
func frontError(err error) error {
	e, ok := errors.AsType[*apierror.Error](err)
	if !ok || e.Param == "" {
		return err
	}
	name, ok := frontParams[e.Param]
	if !ok {
		return err
	}
	c := *e
	c.Param = name
	c.Message = name + strings.TrimPrefix(e.Message, e.Param)
	return &c
}

// SizeToArk maps a size "WxH" onto the task API's resolution and ratio, as adaptor.Band and
// adaptor.Ratio map a size a provider reports: Sora's 1024x1792 is 1080p 9:16; 1280x720 is 720p
// 16:9.
func SizeToArk(size string) (resolution, ratio string, err error) {
	ws, hs, ok := strings.Cut(size, "x")
	w, errW := strconv.ParseInt(ws, 10, 64)
	h, errH := strconv.ParseInt(hs, 10, 64)
	if !ok || errW != nil || errH != nil || w < 1 || h < 1 || w > 8192 || h > 8192 {
		return "", "", frontInvalid("size", "must be width x height in pixels, such as 1280x720")
	}
	return adaptor.Band(w, h), adaptor.Ratio(w, h), nil
}

// ArkToSize is the size "WxH" of a resolution and ratio of the task API: the short side of the
// resolution, the long side by the ratio rounded to an even number of pixels. Unknown values
// are taken as 720p and 16:9, the contract's defaults.
func ArkToSize(resolution, ratio string) string {
	side := int64(720)
	for _, r := range adaptor.Resolutions {
		if r.Name == resolution {
			side = r.Side
		}
	}
	rw, rh := int64(16), int64(9)
	for _, r := range adaptor.Ratios {
		if r.Name == ratio {
			rw, rh = r.W, r.H
		}
	}
	if rw >= rh {
		return fmt.Sprintf("%dx%d", evenRound(float64(side*rw)/float64(rh)), side)
	}
	return fmt.Sprintf("%dx%d", side, evenRound(float64(side*rh)/float64(rw)))
}

func evenRound(x float64) int { return 2 * int(math.Round(x/2)) }
