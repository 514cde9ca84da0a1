package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// geminiFake answers the generate-content methods of one model the way the Gemini API reference
// describes them, for the provider's own key only: POST {base}/models/{model}:generateContent
// (a GenerateContentResponse), :streamGenerateContent?alt=sse (the same as server-sent events),
// :countTokens ({"totalTokens"}), :embedContent ({"embedding"}) and :batchEmbedContents (one
// embedding per request, each of which must name the path's model as models/{model}). Anything
// else, a request with another key or with any key in its query, gets the API's error shape.
type geminiFake struct {
	base, model, key string
}

// handles reports whether the request is for this fake: a path under its base.
func (g geminiFake) handles(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, g.base+"/models/")
}

func (g geminiFake) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	method, ok := strings.CutPrefix(r.URL.Path, g.base+"/models/"+g.model+":")
	switch {
	case r.Header.Get("X-Goog-Api-Key") != g.key || r.Header.Get("Authorization") != "" || r.URL.Query().Has("key"):
		geminiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "API key not valid")
		return
	case !ok || r.Method != http.MethodPost:
		geminiError(w, http.StatusNotFound, "NOT_FOUND", "no such method")
		return
	case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || !json.Valid(body):
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "the body must be JSON")
		return
	}
	var req struct {
		Contents []json.RawMessage `json:"contents"`
		Content  json.RawMessage   `json:"content"`
		Requests []struct {
			Model   string          `json:"model"`
			Content json.RawMessage `json:"content"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
		return
	}
	const answer = `{"candidates":[{"content":{"role":"model","parts":[{"text":%q}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":6,"totalTokenCount":7},"modelVersion":%q}`
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "generateContent":
		if len(req.Contents) == 0 {
			geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "contents is required")
			return
		}
		fmt.Fprintf(w, answer, "hello from the fake generateContent upstream", g.model)
	case "streamGenerateContent":
		if len(req.Contents) == 0 || r.URL.Query().Get("alt") != "sse" {
			geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "contents and alt=sse are required here")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, part := range []string{"hello from ", "the fake stream"} {
			fmt.Fprintf(w, "data: "+answer+"\r\n\r\n", part, g.model)
		}
	case "countTokens":
		io.WriteString(w, `{"totalTokens":3}`)
	case "embedContent":
		if len(req.Content) == 0 {
			geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "content is required")
			return
		}
		io.WriteString(w, `{"embedding":{"values":[0.1,0.2,0.3]}}`)
	case "batchEmbedContents":
		embeddings := make([]string, len(req.Requests))
		for i, one := range req.Requests {
			if one.Model != "models/"+g.model || len(one.Content) == 0 {
				geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("requests[%d] must name models/%s and have content", i, g.model))
				return
			}
			embeddings[i] = `{"values":[0.1,0.2,0.3]}`
		}
		if len(embeddings) == 0 {
			geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "requests is required")
			return
		}
		io.WriteString(w, `{"embeddings":[`+strings.Join(embeddings, ",")+`]}`)
	default:
		geminiError(w, http.StatusNotFound, "NOT_FOUND", "no such method")
	}
}

// geminiError writes the Gemini API's error shape.
func geminiError(w http.ResponseWriter, status int, code, message string) {
	b, err := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": message, "status": code}})
	if err != nil {
		b = []byte(`{"error":{"message":"unencodable error"}}`) // not reached: strings and an int always marshal
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
