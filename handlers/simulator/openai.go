package simulator

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// openAIRoutes maps path suffixes to the OpenAI-style endpoints the simulator answers.
func (s *Simulator) openAIRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"/chat/completions":     s.chat,
		"/embeddings":           s.embeddings,
		"/images/generations":   s.images,
		"/images/edits":         s.images,
		"/audio/speech":         s.speech,
		"/audio/transcriptions": s.transcription,
		"/audio/translations":   s.transcription,
		"/responses":            s.echo("response"),
		"/messages":             s.message,
		"/rerank":               s.echo("rerank"),
		"/video/generations":    s.echo("video.generation"),
	}
}

// ChunkDelay is the pause between the events of a simulated stream.
var ChunkDelay = 20 * time.Millisecond

// readJSON decodes a JSON request body into v.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 32<<20)).Decode(v); err != nil {
		upstreamError(w, http.StatusBadRequest, "invalid_request_error", "the request body must be a JSON object")
		return false
	}
	return true
}

func (s *Simulator) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	id, created := "chatcmpl-sim-"+strings.ToLower(rand.Text()[:10]), s.now().Unix()
	usage := map[string]int{"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
	words := []string{"Hello", " from", " the", " mediagw", " simulator."}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": strings.Join(words, "")}}},
			"usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	for i, word := range words {
		chunk := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": word}, "finish_reason": nil}},
		}
		if i == len(words)-1 {
			chunk["choices"] = []any{map[string]any{"index": 0, "delta": map[string]string{"content": word}, "finish_reason": "stop"}}
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(ChunkDelay):
		}
	}
	if req.StreamOptions.IncludeUsage { // OpenAI's last chunk: no choices, the usage
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "choices": []any{}, "usage": usage})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// The simulator runs in the gateway's process (Caddyfile.example), so it bounds every count a
// client sends before it allocates for it, with OpenAI's published limits: an embeddings input
// of at most 2,048 items, 1 to 10 images, and a speech input of at most 4,096 characters.
const (
	maxEmbeddingInputs = 2048
	maxImages          = 10
	maxSpeechInput     = 4096
)

// paramError refuses a request for one field, in OpenAI's error shape: 400, type
// invalid_request_error and the field in param.
func paramError(w http.ResponseWriter, param, message string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
		"message": message, "type": "invalid_request_error", "param": param, "code": "invalid_value"}})
}

func (s *Simulator) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	n := 1
	var list []any
	if json.Unmarshal(req.Input, &list) == nil {
		n = max(len(list), 1)
	}
	if n > maxEmbeddingInputs {
		paramError(w, "input", fmt.Sprintf("input must have at most %d items", maxEmbeddingInputs))
		return
	}
	data := make([]any, n)
	for i := range data {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": []float64{0.1, -0.2, 0.3, float64(i)}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": 3, "total_tokens": 3}})
}

// images answers generations and edits. A model whose name contains "async" answers with a task
// id instead of URLs; the task can be read at images/tasks/{id}.
func (s *Simulator) images(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		N     int    `json:"n"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if req.N < 0 || req.N > maxImages {
		paramError(w, "n", fmt.Sprintf("n must be between 1 and %d", maxImages))
		return
	}
	if strings.Contains(req.Model, "async") {
		writeJSON(w, http.StatusOK, map[string]any{"id": "imgt-" + strings.ToLower(rand.Text()[:12]), "status": "queued", "created": s.now().Unix()})
		return
	}
	data := make([]any, max(req.N, 1))
	for i := range data {
		data[i] = map[string]string{"url": fmt.Sprintf("https://simulator.mediagw.invalid/images/%d.png", i)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"created": s.now().Unix(), "data": data})
}

// imageTask answers a query of a simulated asynchronous image task: it has always succeeded.
func (s *Simulator) imageTask(w http.ResponseWriter, id string) {
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": "succeeded", "progress": 100, "created": s.now().Unix(),
		"data": []any{map[string]string{"url": "https://simulator.mediagw.invalid/images/" + id + ".png"}}})
}

func (s *Simulator) speech(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input string `json:"input"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if n := utf8.RuneCountInString(req.Input); n > maxSpeechInput {
		paramError(w, "input", fmt.Sprintf("input must be at most %d characters, not %d", maxSpeechInput, n))
		return
	}
	w.Header().Set("Content-Type", "audio/mpeg")
	// Not a real MP3: an ID3 header and bytes proportional to the input.
	_, _ = w.Write(append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), []byte(strings.Repeat("\xff\xfb", len(req.Input)+16))...))
}

// transcription streams a multipart upload, counting the file's bytes without keeping them.
func (s *Simulator) transcription(w http.ResponseWriter, r *http.Request) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		upstreamError(w, http.StatusBadRequest, "invalid_request_error", "expected multipart/form-data")
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var model string
	var fileBytes int64
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			upstreamError(w, http.StatusBadRequest, "invalid_request_error", "malformed multipart body")
			return
		}
		switch part.FormName() {
		case "model":
			b, _ := io.ReadAll(io.LimitReader(part, 512))
			model = string(b)
		case "file":
			fileBytes, _ = io.Copy(io.Discard, part)
		default:
			_, _ = io.Copy(io.Discard, part)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"text": fmt.Sprintf("simulated transcript of %d bytes by %s", fileBytes, model)})
}

// echo answers a generic endpoint with an object that names the model.
func (s *Simulator) echo(object string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if !readJSON(w, r, &req) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": object + "-sim-" + strings.ToLower(rand.Text()[:8]),
			"object": object, "model": req["model"], "created": s.now().Unix(), "simulated": true})
	}
}

// message answers an Anthropic-style messages call with one text block, as the Anthropic SDKs
// read it.
func (s *Simulator) message(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if !readJSON(w, r, &req) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "msg_sim_" + strings.ToLower(rand.Text()[:8]), "type": "message", "role": "assistant",
		"model": req["model"], "stop_reason": "end_turn",
		"content": []any{map[string]string{"type": "text", "text": "Hello from the mediagw simulator."}},
		"usage":   map[string]int{"input_tokens": 1, "output_tokens": 6},
	})
}

// generateContent answers a Gemini-style models/{model}:generateContent call.
func (s *Simulator) generateContent(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if !readJSON(w, r, &req) {
		return
	}
	model := r.URL.Path[strings.LastIndex(r.URL.Path, "/models/")+len("/models/"):]
	model = model[:strings.Index(model, ":")]
	writeJSON(w, http.StatusOK, map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]string{"text": "Hello from the mediagw simulator."}}}, "finishReason": "STOP"}},
		"modelVersion": model,
	})
}
