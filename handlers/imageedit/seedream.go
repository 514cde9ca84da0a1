package imageedit

import (
	"encoding/json"
	"math"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// SeedreamPath is Ark's image generation endpoint, relative to an Ark base URL (…/api/v3). A
// provider whose `protocol` is written out as `ark` gets its image edits there, as Seedream
// image generations; see toSeedream.
const SeedreamPath = "images/generations"

// seedreamRequest is the body of Ark's POST /api/v3/images/generations (BytePlus ModelArk
// "Image generation API", Seedream 4.x), with only the fields an edit maps to:
//
//   - model: the model (or endpoint) id, the upstream's id of the edit's model;
//   - prompt: the edit's prompt;
//   - image: the input images, a URL string for one image or an array of URL strings for
//     several (Seedream takes up to 14 reference images);
//   - size: "WIDTHxHEIGHT" in pixels (Ark also takes "1K", "2K", "4K"; the edit's sizes are all
//     pixel sizes within Seedream 4.0's range);
//   - seed: an integer from -1 to 2147483647 (models that support it);
//   - watermark: boolean, Ark's default true;
//   - response_format: "url" (Ark's other value, b64_json, would carry image bytes through the
//     gateway, which it never does);
//   - sequential_image_generation: "disabled" makes one image; "auto" lets the model make a set
//     of up to sequential_image_generation_options.max_images (1 to 15; input images and
//     output images together at most 15).
type seedreamRequest struct {
	Model                     string             `json:"model"`
	Prompt                    string             `json:"prompt"`
	Image                     any                `json:"image"`
	Size                      string             `json:"size"`
	Seed                      *int64             `json:"seed,omitempty"`
	Watermark                 *bool              `json:"watermark,omitempty"`
	ResponseFormat            string             `json:"response_format"`
	SequentialImageGeneration string             `json:"sequential_image_generation"`
	SequentialOptions         *sequentialOptions `json:"sequential_image_generation_options,omitempty"`
}

type sequentialOptions struct {
	MaxImages int64 `json:"max_images"`
}

// seedreamEdit is what toSeedream reads of a body ParseEdit accepted.
type seedreamEdit struct {
	Prompt string `json:"prompt"`
	Images []struct {
		ImageURL string `json:"image_url"`
	} `json:"images"`
	N         json.RawMessage `json:"n"`
	Size      string          `json:"size"`
	Seed      json.RawMessage `json:"seed"`
	Watermark json.RawMessage `json:"watermark"`
}

// toSeedream maps an edit body, checked by ParseEdit, to a Seedream image generation for the
// upstream model id upstreamModel. The images' checked image_url values become image; n above 1
// asks for a set of up to n images (sequential_image_generation auto), n 1 or absent for one.
// seed (an integer from -1 to 2147483647) and watermark (a boolean), which the edit contract
// does not name, are mapped when given and refused with 400 when of the wrong type or range.
// Every other field (quality, output_format, moderation, mask, and unknown fields) has no
// Seedream counterpart and is not sent: only what was checked reaches Ark.
func toSeedream(body []byte, upstreamModel string) ([]byte, error) {
	var e seedreamEdit
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, err
	}
	req := seedreamRequest{Model: upstreamModel, Prompt: e.Prompt, Size: e.Size, ResponseFormat: "url", SequentialImageGeneration: "disabled"}
	if req.Size == "" {
		req.Size = billing.DefaultImageSize // Seedream is told the size the hold priced
	}
	urls := make([]string, len(e.Images))
	for i, img := range e.Images {
		urls[i] = img.ImageURL
	}
	if len(urls) == 1 {
		req.Image = urls[0]
	} else {
		req.Image = urls
	}
	if n, ok := jsonkeys.Integer(e.N); ok && n > 1 {
		req.SequentialImageGeneration = "auto"
		req.SequentialOptions = &sequentialOptions{MaxImages: n}
	}
	if present(e.Seed) {
		seed, ok := jsonkeys.Integer(e.Seed)
		if !ok || seed < -1 || seed > math.MaxInt32 {
			return nil, invalid("seed", "must be an integer from -1 to 2147483647")
		}
		req.Seed = &seed
	}
	if present(e.Watermark) {
		var w bool
		if json.Unmarshal(e.Watermark, &w) != nil {
			return nil, invalid("watermark", "must be a boolean")
		}
		req.Watermark = &w
	}
	return json.Marshal(req)
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// seedreamAnswer is Ark's 200 answer to an image generation: data holds one item per image,
// {"url", "size"}, or, for an image of a set that failed, {"error": {"code", "message"}};
// usage.generated_images counts the images billed.
type seedreamAnswer struct {
	Created *int64 `json:"created"`
	Data    []struct {
		URL   string          `json:"url"`
		Error json.RawMessage `json:"error"`
	} `json:"data"`
}

// editAnswer is the edit's answer shape (spec §2.7): {"created", "data": [{"url"}]}, and, when
// no image was made, the error Ark reported for the first failed image.
type editAnswer struct {
	Created int64           `json:"created"`
	Data    []editImage     `json:"data"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type editImage struct {
	URL string `json:"url"`
}

// fromSeedream maps Ark's 200 answer to the edit's answer: the items of data that carry an url,
// so that the edit is charged for the images made. An answer that is not Ark's shape (no
// created, no data) is upstream.ErrUnreadable.
func fromSeedream(body []byte) ([]byte, error) {
	var a seedreamAnswer
	if json.Unmarshal(body, &a) != nil || a.Created == nil || a.Data == nil {
		return nil, upstream.ErrUnreadable
	}
	out := editAnswer{Created: *a.Created, Data: []editImage{}}
	for _, item := range a.Data {
		switch {
		case item.URL != "":
			out.Data = append(out.Data, editImage{URL: item.URL})
		case out.Error == nil && present(item.Error):
			out.Error = item.Error
		}
	}
	if len(out.Data) > 0 {
		out.Error = nil
	}
	return json.Marshal(out)
}
