package caddymodule

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/upstream"
)

// maxRedactedError bounds an upstream error answer that is read whole to redact credentials
// from it; a longer one (or one compressed with anything but gzip) passes unchanged.
const maxRedactedError = 64 << 10

// redactErrorAnswer removes credential-like tokens (see upstream.RedactSecrets) from a non-2xx
// JSON answer before it reaches the client: providers quote a masked form of the operator's key
// when they refuse it ("Incorrect API key provided: sk-proj-****abcd"). Only string values are
// changed; an answer with nothing to redact passes byte for byte. 2xx answers and event streams
// are never touched.
func redactErrorAnswer(resp *http.Response) {
	if resp.StatusCode < 300 {
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return
	}
	encoding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	if (encoding != "" && encoding != "identity" && encoding != "gzip") || resp.ContentLength > maxRedactedError {
		return
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRedactedError+1))
	if err != nil || len(raw) > maxRedactedError {
		// Pass on what was read and the rest as it comes.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(raw), resp.Body), resp.Body}
		return
	}
	// The whole answer was read: an error closing it loses nothing.
	_ = resp.Body.Close()
	body := raw
	if encoding == "gzip" {
		body = gunzip(raw)
	}
	redacted, changed := upstream.RedactJSON(body)
	if !changed {
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		return
	}
	resp.Header.Del("Content-Encoding")
	resp.Body = io.NopCloser(bytes.NewReader(redacted))
	resp.ContentLength = int64(len(redacted))
	resp.Header.Set("Content-Length", strconv.Itoa(len(redacted)))
}

// gunzip decodes a gzip body of at most maxRedactedError bytes once decoded; anything else
// (corrupt, larger) gives nil, which holds nothing to redact.
func gunzip(raw []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(zr, maxRedactedError+1))
	if err != nil || len(body) > maxRedactedError {
		return nil
	}
	return body
}
