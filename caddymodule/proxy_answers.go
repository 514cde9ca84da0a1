package caddymodule

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/providers"
)

// maxRewrittenAnswer bounds a JSON answer that is read whole to show the client's model id;
// a longer one passes unchanged.
const maxRewrittenAnswer = 32 << 20

// showClientModels shows an answer's model ids as the client's (providers.AnswerModels): in a
// JSON answer, and in each JSON event of an event stream, as the events pass.
func showClientModels(resp *http.Response, models providers.AnswerModels) {
	if resp.Header.Get("Content-Encoding") != "" {
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "text/event-stream":
		resp.Body = providers.NewModelRewriter(resp.Body, models)
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		if resp.ContentLength > maxRewrittenAnswer {
			return
		}
		body, ok := readAnswer(resp, maxRewrittenAnswer)
		if !ok {
			return
		}
		if shown, ok := models.Show(body); ok {
			body = shown
		}
		setAnswer(resp, body)
	}
}

// readAnswer reads a whole answer of at most limit bytes and closes its body. A longer one, or
// one that fails to read, is left to pass on as it comes (what was read first, then the rest),
// and ok is false.
func readAnswer(resp *http.Response, limit int64) (body []byte, ok bool) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil || int64(len(body)) > limit {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		return nil, false
	}
	_ = resp.Body.Close() // the whole answer was read: an error closing it loses nothing
	return body, true
}

// setAnswer makes body the answer's body, with its length.
func setAnswer(resp *http.Response, body []byte) {
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
}
