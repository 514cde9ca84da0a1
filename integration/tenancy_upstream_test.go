package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// providerFake is a fake model provider for the tenant-isolation tests. It records every model
// it is asked to run and every call it receives, and answers like the provider APIs mediagw
// passes through to (Ark tasks, OpenAI videos, responses, images). Its list endpoints answer with
// "every account's" objects, so a leak through the gateway shows.
//
// A fake with fold set reads JSON keys as Go's encoding/json does (case-insensitive, the last of
// repeated keys wins; the simulator does the same); without it, keys are exact and the first of
// repeated keys wins, as other decoders do. Multipart fields likewise: fold takes the last model
// part, exact the first.
type providerFake struct {
	*httptest.Server
	fold bool

	// hold, when set, holds a streamed response after its first event until it is closed.
	hold chan struct{}

	mu     sync.Mutex
	models []string
	calls  []string // "METHOD /path"
}

func newProviderFake(t *testing.T, fold bool) *providerFake {
	f := &providerFake{fold: fold}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// seen returns the models and calls received so far.
func (f *providerFake) seen() (models, calls []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.models...), append([]string(nil), f.calls...)
}

func (f *providerFake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	model := f.model(r.Header.Get("Content-Type"), body)
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	if model != "" {
		f.models = append(f.models, model)
	}
	f.mu.Unlock()

	p := r.URL.Path
	last := p[strings.LastIndex(p, "/")+1:]
	newID := func(prefix string) string { return prefix + strings.ToLower(rand.Text()[:10]) }
	answer := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case r.Method == "POST" && strings.HasSuffix(p, "/contents/generations/tasks"):
		answer(map[string]any{"id": newID("cgt-")})
	case r.Method == "GET" && strings.Contains(p, "/contents/generations/tasks/"):
		answer(map[string]any{"id": last, "model": model, "status": "queued", "content": map[string]any{}})
	case r.Method == "POST" && last == "remix":
		answer(map[string]any{"id": newID("video_"), "object": "video", "status": "queued"})
	case r.Method == "POST" && strings.HasSuffix(p, "/videos"):
		answer(map[string]any{"id": newID("video_"), "object": "video", "status": "queued"})
	case r.Method == "POST" && strings.HasSuffix(p, "/video/generations"):
		answer(map[string]any{"task_id": newID("vg_"), "status": "queued"})
	case r.Method == "POST" && strings.HasSuffix(p, "/images/generations"):
		answer(map[string]any{"id": newID("imgt_"), "status": "queued"})
	case r.Method == "POST" && strings.HasSuffix(p, "/images/edits"):
		answer(map[string]any{"created": 1, "data": []any{map[string]string{"url": "https://cdn.example.com/out.png"}}})
	case r.Method == "POST" && strings.HasSuffix(p, "/responses"):
		id := newID("resp_")
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			answer(map[string]any{"id": id, "object": "response", "status": "completed"})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":%q,\"object\":\"response\"}}\n\n", id)
		w.(http.Flusher).Flush()
		if f.hold != nil {
			<-f.hold
		}
		fmt.Fprint(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n")
		fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":%q}}\n\n", id)
	case r.Method == "POST" && strings.HasSuffix(p, "/chat/completions"):
		answer(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": model, "choices": []any{}})
	case r.Method == "POST" && strings.HasSuffix(p, "/audio/transcriptions"):
		answer(map[string]any{"text": "transcript by " + model})
	case strings.HasSuffix(p, "/content"):
		w.Header().Set("Content-Type", "video/mp4")
		fmt.Fprint(w, "MP4 bytes of "+strings.TrimSuffix(p, "/content"))
	case r.Method == "GET" || r.Method == "DELETE":
		// Any object, or a list of the whole upstream account's objects.
		answer(map[string]any{"id": last, "object": "upstream-object", "every_account": []string{"cgt-of-customer-a", "cgt-of-customer-b"}})
	default:
		answer(map[string]any{"object": "echo", "path": p, "model": model})
	}
}

// model reads the model of a body the way this fake's decoder would.
func (f *providerFake) model(contentType string, body []byte) string {
	mt, params, _ := mime.ParseMediaType(contentType)
	if mt == "multipart/form-data" {
		var models []string
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			part, err := mr.NextPart()
			if err != nil {
				break
			}
			v, _ := io.ReadAll(part)
			if part.FormName() == "model" || (f.fold && strings.EqualFold(part.FormName(), "model")) {
				models = append(models, string(v))
			}
		}
		switch {
		case len(models) == 0:
			return ""
		case f.fold:
			return models[len(models)-1]
		}
		return models[0]
	}
	if f.fold {
		var v struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &v)
		return v.Model
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		var value json.RawMessage
		if dec.Decode(&value) != nil {
			return ""
		}
		if key == "model" {
			var s string
			_ = json.Unmarshal(value, &s)
			return s
		}
	}
	return ""
}
