package integration

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// fakeGemini is a strict fake of Veo through the Gemini API, from its published reference:
// POST /v1beta/models/{model}:predictLongRunning with {"instances":[{"prompt":…}],"parameters":{…}}
// and the API key in x-goog-api-key, answered with a long-running operation {"name":
// "models/{model}/operations/{id}"}; GET /v1beta/{operation name}, done when finished, with
// response.generateVideoResponse.generatedSamples[].video.uri, a file URI that is downloaded with
// the API key and redirects to signed storage. Errors are {"error":{"code","message","status"}}.
type fakeGemini struct {
	key string
	log fakeLog
	// Video is the bytes every finished task's file holds.
	Video []byte

	ops fakeTasks
}

// geminiCreate is the predictLongRunning body of the reference (the Gemini API's fields).
type geminiCreate struct {
	Instances []struct {
		Prompt          string         `json:"prompt"`
		Image           map[string]any `json:"image"`
		LastFrame       map[string]any `json:"lastFrame"`
		ReferenceImages []any          `json:"referenceImages"`
	} `json:"instances"`
	Parameters *struct {
		AspectRatio      *string `json:"aspectRatio"`
		NegativePrompt   *string `json:"negativePrompt"`
		Resolution       *string `json:"resolution"`
		DurationSeconds  *int    `json:"durationSeconds"`
		PersonGeneration *string `json:"personGeneration"`
		NumberOfVideos   *int    `json:"numberOfVideos"`
	} `json:"parameters"`
}

func newFakeGemini(t *testing.T, key string) (*fakeGemini, string) {
	f := &fakeGemini{key: key, Video: []byte("\x00\x00\x00\x18ftypmp42 fake veo video bytes")}
	srv := startFake(t, f)
	return f, srv.URL + "/v1beta"
}

func (f *fakeGemini) refuse(w http.ResponseWriter, status int, grpcStatus, message string) {
	writeFakeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": grpcStatus}})
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := f.log.record(r)
	if strings.HasPrefix(r.URL.Path, "/storage/") {
		f.storage(w, r)
		return
	}
	if r.Header.Get("Authorization") != "" {
		f.refuse(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token or an API key.")
		return
	}
	if r.Header.Get("X-Goog-Api-Key") != f.key {
		f.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1beta/")
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(path, "models/") && strings.HasSuffix(path, ":predictLongRunning"):
		f.create(w, r, strings.TrimSuffix(strings.TrimPrefix(path, "models/"), ":predictLongRunning"), body)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "files/") && strings.HasSuffix(path, ":download"):
		if r.URL.Query().Get("alt") != "media" {
			f.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "alt=media is required to download a file")
			return
		}
		http.Redirect(w, r, "/storage/"+strings.TrimSuffix(strings.TrimPrefix(path, "files/"), ":download")+"?sig=signed", http.StatusFound)
	case r.Method == http.MethodGet && strings.Contains(path, "/operations/"):
		f.read(w, r, path)
	default:
		f.refuse(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
	}
}

// veoLengths are the durationSeconds a Veo model takes, as the Gemini API's reference lists
// them: 4, 6 or 8 for Veo 3 and 3.1, 5 to 8 for Veo 2 (any of those for another name).
func veoLengths(model string) []int {
	switch {
	case strings.HasPrefix(model, "veo-3"):
		return []int{4, 6, 8}
	case strings.HasPrefix(model, "veo-2"):
		return []int{5, 6, 7, 8}
	}
	return []int{4, 5, 6, 7, 8}
}

func (f *fakeGemini) create(w http.ResponseWriter, r *http.Request, model string, body []byte) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		f.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	var c geminiCreate
	if err := decodeStrict(body, &c); err != nil {
		f.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received. "+err.Error())
		return
	}
	if len(c.Instances) != 1 || c.Instances[0].Prompt == "" && c.Instances[0].Image == nil {
		f.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "exactly one instance with a prompt or an image is required")
		return
	}
	if p := c.Parameters; p != nil {
		switch {
		case p.AspectRatio != nil && !slices.Contains([]string{"16:9", "9:16"}, *p.AspectRatio):
			f.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "aspectRatio must be 16:9 or 9:16")
			return
		case p.Resolution != nil && !slices.Contains([]string{"720p", "1080p"}, *p.Resolution):
			f.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", "resolution must be 720p or 1080p")
			return
		case p.DurationSeconds != nil && !slices.Contains(veoLengths(model), *p.DurationSeconds):
			f.refuse(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("durationSeconds must be one of %v for %s", veoLengths(model), model))
			return
		}
	}
	name := f.ops.add(func(n int) string { return fmt.Sprintf("models/%s/operations/op%04dxyz", model, n) },
		fakeTask{script: scriptOf(c.Instances[0].Prompt)})
	writeFakeJSON(w, http.StatusOK, map[string]string{"name": name})
}

func (f *fakeGemini) read(w http.ResponseWriter, r *http.Request, name string) {
	op, step, ok := f.ops.step(name)
	if !ok {
		f.refuse(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
		return
	}
	if step == 0 {
		w.Header().Set("Retry-After", "2")
		f.refuse(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")
		return
	}
	answer := map[string]any{"name": name}
	switch {
	case step < 3 || op.script == scriptSlow:
		answer["done"] = false
	case op.script == scriptUnknown:
		answer["done"] = true // neither response nor error
	case op.script == scriptFail:
		answer["done"] = true
		answer["error"] = map[string]any{"code": 3, "message": "The prompt could not be submitted.", "status": "INVALID_ARGUMENT"}
	default:
		answer["done"] = true
		uri := "http://" + r.Host + "/v1beta/files/" + strings.ReplaceAll(name, "/", "-") + ":download?alt=media"
		answer["response"] = map[string]any{
			"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
			"generateVideoResponse": map[string]any{
				"generatedSamples": []any{map[string]any{"video": map[string]string{"uri": uri}}},
			},
		}
	}
	writeFakeJSON(w, http.StatusOK, answer)
}

// storage serves a file's bytes at the signed address its download redirects to. The API key is
// not the storage's business: a request that carries it is refused, so a client that forwards
// the credential across the redirect fails.
func (f *fakeGemini) storage(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Goog-Api-Key") != "" || r.Header.Get("Authorization") != "" || r.URL.Query().Get("sig") != "signed" {
		http.Error(w, "credential sent to storage, or no signature", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	_, _ = w.Write(f.Video) // a test fake: a failed write shows as a short body
}
