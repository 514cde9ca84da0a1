package adaptor

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Roles of a media reference, as the contract names them (spec §2.3).
const (
	RoleFirstFrame     = "first_frame"
	RoleLastFrame      = "last_frame"
	RoleReferenceImage = "reference_image"
	RoleReferenceVideo = "reference_video"
	RoleReferenceAudio = "reference_audio"
)

// Request is a create request in the gateway's canonical form: what every adaptor reads, and
// what the task record keeps (storage.Task.Request). It is decoded from a body the task API has
// already checked against the contract (videotask.ParseCreate), so FromArk checks no ranges.
type Request struct {
	// Model is the id sent upstream (the provider's model_map applied).
	Model string `json:"model"`
	// Prompt is the text of the content items, joined with newlines.
	Prompt string `json:"prompt,omitempty"`
	// NegativePrompt is the text of a tools item {"type":"negative_prompt","text":…}.
	NegativePrompt string `json:"negative_prompt,omitempty"`
	// Media are the image, video and audio references with their roles.
	Media []Media `json:"media,omitempty"`
	// Duration is in seconds (-1: the model chooses); Frames the frame count. Zero: not given.
	Duration int64 `json:"duration,omitempty"`
	Frames   int64 `json:"frames,omitempty"`
	// Resolution ("480p", "720p", "1080p") and Ratio ("16:9", …, "adaptive") as the contract
	// spells them.
	Resolution string `json:"resolution,omitempty"`
	Ratio      string `json:"ratio,omitempty"`
	// Seed is the seed when given (-1 asks for a random one).
	Seed *int64 `json:"seed,omitempty"`
	// The contract's flags, when given.
	GenerateAudio *bool `json:"generate_audio,omitempty"`
	CameraFixed   *bool `json:"camera_fixed,omitempty"`
	Watermark     *bool `json:"watermark,omitempty"`
	// ExecutionExpiresAfter is how long the task may run, in seconds (zero: the contract's
	// default, DefaultExecutionExpiresAfter).
	ExecutionExpiresAfter int64 `json:"execution_expires_after,omitempty"`
}

// DefaultExecutionExpiresAfter is the contract's default execution_expires_after, in seconds.
const DefaultExecutionExpiresAfter = 172800

// Media is one media reference of a create request.
type Media struct {
	// Kind is "image", "video" or "audio".
	Kind string `json:"kind"`
	// Role is one of the Role constants. An image without a role is the first frame.
	Role string `json:"role"`
	URL  string `json:"url"`
}

// Find returns the first media reference with the role.
func (r Request) Find(role string) (Media, bool) {
	for _, m := range r.Media {
		if m.Role == role {
			return m, true
		}
	}
	return Media{}, false
}

// arkBody is the part of the Ark create body (spec §2.2) that the canonical form keeps.
type arkBody struct {
	Content []struct {
		Type     string                `json:"type"`
		Text     string                `json:"text"`
		Role     string                `json:"role"`
		ImageURL *struct{ URL string } `json:"image_url"`
		VideoURL *struct{ URL string } `json:"video_url"`
		AudioURL *struct{ URL string } `json:"audio_url"`
	} `json:"content"`
	Duration              *int64            `json:"duration"`
	Frames                *int64            `json:"frames"`
	Resolution            string            `json:"resolution"`
	Ratio                 string            `json:"ratio"`
	Seed                  *int64            `json:"seed"`
	GenerateAudio         *bool             `json:"generate_audio"`
	CameraFixed           *bool             `json:"camera_fixed"`
	Watermark             *bool             `json:"watermark"`
	ExecutionExpiresAfter int64             `json:"execution_expires_after"`
	Tools                 []json.RawMessage `json:"tools"`
}

// FromArk decodes a checked Ark create body into the canonical form; model is the id to send
// upstream. Fields the canonical form does not hold (service_tier, draft, priority, …) are
// dropped: no adaptor maps them.
func FromArk(body []byte, model string) (Request, error) {
	var b arkBody
	if err := json.Unmarshal(body, &b); err != nil {
		return Request{}, fmt.Errorf("decoding a checked create body: %w", err)
	}
	r := Request{Model: model, Resolution: b.Resolution, Ratio: b.Ratio, Seed: b.Seed,
		GenerateAudio: b.GenerateAudio, CameraFixed: b.CameraFixed, Watermark: b.Watermark,
		ExecutionExpiresAfter: b.ExecutionExpiresAfter}
	if b.Duration != nil {
		r.Duration = *b.Duration
	}
	if b.Frames != nil {
		r.Frames = *b.Frames
	}
	var texts []string
	for _, item := range b.Content {
		switch {
		case item.Type == "text":
			texts = append(texts, item.Text)
		case item.Type == "image_url" && item.ImageURL != nil:
			r.Media = append(r.Media, Media{Kind: "image", Role: roleOr(item.Role, RoleFirstFrame), URL: item.ImageURL.URL})
		case item.Type == "video_url" && item.VideoURL != nil:
			r.Media = append(r.Media, Media{Kind: "video", Role: roleOr(item.Role, RoleReferenceVideo), URL: item.VideoURL.URL})
		case item.Type == "audio_url" && item.AudioURL != nil:
			r.Media = append(r.Media, Media{Kind: "audio", Role: roleOr(item.Role, RoleReferenceAudio), URL: item.AudioURL.URL})
		}
	}
	r.Prompt = strings.Join(texts, "\n")
	for _, raw := range b.Tools {
		var tool struct{ Type, Text string }
		if json.Unmarshal(raw, &tool) == nil && tool.Type == "negative_prompt" {
			r.NegativePrompt = tool.Text
		}
	}
	return r, nil
}

func roleOr(role, dflt string) string {
	if role == "" {
		return dflt
	}
	return role
}
