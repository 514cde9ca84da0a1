package integration

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeArkImages is a strict fake of Ark's Seedream image generation, from the BytePlus ModelArk
// "Image generation API" reference: POST /api/v3/images/generations with
// Authorization: Bearer <key> and a JSON body of model and prompt (required), image (a URL
// string, or an array of 1 to 14 URL strings), size ("1K", "2K", "4K" or "WIDTHxHEIGHT"), seed
// (an integer from -1 to 2147483647), sequential_image_generation ("auto" or "disabled"),
// sequential_image_generation_options ({"max_images": 1 to 15}; input and output images at most
// 15 together), stream, response_format ("url" or "b64_json") and watermark (boolean). Any other
// field, or a field of another type, is refused. It answers {"model", "created", "data":
// [{"url", "size"}], "usage": {"generated_images", "output_tokens", "total_tokens"}}; errors are
// {"error": {"code", "message", "param", "type"}}. It records every request it received.
//
// The prompt picks the run: "[fail]" is refused as sensitive input text (400), "[fewer]" with
// sequential_image_generation auto makes one image less than max_images (the model decides how
// many images a set has).
type fakeArkImages struct {
	key string
	log fakeLog
	url string
}

// arkImagesRequest is the request body of the reference.
type arkImagesRequest struct {
	Model                     string          `json:"model"`
	Prompt                    string          `json:"prompt"`
	Image                     json.RawMessage `json:"image"`
	Size                      *string         `json:"size"`
	Seed                      *int64          `json:"seed"`
	SequentialImageGeneration *string         `json:"sequential_image_generation"`
	SequentialOptions         *struct {
		MaxImages *int64 `json:"max_images"`
	} `json:"sequential_image_generation_options"`
	Stream         *bool   `json:"stream"`
	ResponseFormat *string `json:"response_format"`
	Watermark      *bool   `json:"watermark"`
}

var arkImageSize = regexp.MustCompile(`^[1-9][0-9]{2,4}x[1-9][0-9]{2,4}$`)

func newFakeArkImages(t *testing.T, key string) (*fakeArkImages, string) {
	f := &fakeArkImages{key: key}
	srv := startFake(t, f)
	f.url = srv.URL
	return f, srv.URL + "/api/v3"
}

func (f *fakeArkImages) refuse(w http.ResponseWriter, status int, code, param, message string) {
	writeFakeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message, "param": param, "type": "BadRequest"}})
}

func (f *fakeArkImages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := f.log.record(r)
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		f.refuse(w, http.StatusUnauthorized, "AuthenticationError", "", "the API key in the request is missing or invalid")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/v3/images/generations" {
		f.refuse(w, http.StatusNotFound, "InvalidEndpoint", "", "the requested endpoint does not exist")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", "", "Content-Type must be application/json")
		return
	}
	var req arkImagesRequest
	if err := decodeStrict(body, &req); err != nil {
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", "", "the request body is invalid: "+err.Error())
		return
	}
	images, param, problem := f.check(req)
	if problem != "" {
		f.refuse(w, http.StatusBadRequest, "InvalidParameter", param, problem)
		return
	}
	if strings.Contains(req.Prompt, "[fail]") {
		f.refuse(w, http.StatusBadRequest, "InputTextSensitiveContentDetected", "", "the input text may contain sensitive information")
		return
	}
	made := int64(1)
	if req.SequentialImageGeneration != nil && *req.SequentialImageGeneration == "auto" {
		made = 15 - images
		if req.SequentialOptions != nil && req.SequentialOptions.MaxImages != nil {
			made = min(made, *req.SequentialOptions.MaxImages)
		}
		if strings.Contains(req.Prompt, "[fewer]") && made > 1 {
			made--
		}
	}
	size := "2048x2048"
	if req.Size != nil && arkImageSize.MatchString(*req.Size) {
		size = *req.Size
	}
	data := make([]map[string]string, made)
	for i := range data {
		data[i] = map[string]string{"url": fmt.Sprintf("%s/results/%d.jpeg", f.url, i), "size": size}
	}
	writeFakeJSON(w, http.StatusOK, map[string]any{
		"model": req.Model, "created": time.Now().Unix(), "data": data,
		"usage": map[string]int64{"generated_images": made, "output_tokens": made * 16384, "total_tokens": made * 16384},
	})
}

// check applies the reference's rules; it returns the number of input images, or the param
// that breaks a rule and why.
func (f *fakeArkImages) check(req arkImagesRequest) (images int64, param, problem string) {
	if req.Model == "" {
		return 0, "model", "model is required"
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return 0, "prompt", "prompt is required"
	}
	if len(req.Image) > 0 {
		var one string
		var many []string
		switch {
		case json.Unmarshal(req.Image, &one) == nil && one != "":
			images = 1
		case json.Unmarshal(req.Image, &many) == nil && len(many) >= 1 && len(many) <= 14 && !slices.Contains(many, ""):
			images = int64(len(many))
		default:
			return 0, "image", "image must be a URL string or an array of 1 to 14 URL strings"
		}
	}
	if s := req.Size; s != nil && !slices.Contains([]string{"1K", "2K", "4K"}, *s) {
		if !arkImageSize.MatchString(*s) {
			return 0, "size", "size must be 1K, 2K, 4K or WIDTHxHEIGHT"
		}
	}
	if req.Seed != nil && (*req.Seed < -1 || *req.Seed > math.MaxInt32) {
		return 0, "seed", "seed must be from -1 to 2147483647"
	}
	if s := req.SequentialImageGeneration; s != nil && *s != "auto" && *s != "disabled" {
		return 0, "sequential_image_generation", "sequential_image_generation must be auto or disabled"
	}
	if o := req.SequentialOptions; o != nil && o.MaxImages != nil {
		if *o.MaxImages < 1 || *o.MaxImages > 15 {
			return 0, "sequential_image_generation_options.max_images", "max_images must be from 1 to 15"
		}
		if images+*o.MaxImages > 15 {
			return 0, "sequential_image_generation_options.max_images", "input and output images must be at most 15 together"
		}
	}
	if req.Stream != nil && *req.Stream {
		return 0, "stream", "this fake answers without streaming only"
	}
	if r := req.ResponseFormat; r != nil && *r != "url" && *r != "b64_json" {
		return 0, "response_format", "response_format must be url or b64_json"
	}
	return images, "", ""
}

// received is the number of requests the fake received.
func (f *fakeArkImages) received() int {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	return len(f.log.reqs)
}
