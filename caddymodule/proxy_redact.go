package caddymodule

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/mediagw/mediagw/handlers/upstream"
)

// maxRedactedError bounds an upstream error answer that is read whole to redact credentials
// from it; a longer one (or one compressed with anything but gzip) passes unchanged.
const maxRedactedError = 64 << 10

// redactErrorAnswer removes the credential the gateway sent (secret, the upstream's key, in any
// form an upstream may echo it) and other credential-like tokens (see upstream.RedactSecrets) from
// a non-2xx answer before it reaches the client: providers quote a masked form of the operator's
// key when they refuse it ("Incorrect API key provided: sk-proj-****abcd"), and a misbehaving one
// may echo it whole. In a JSON answer only string values are changed; any other answer (plain
// text, HTML) is redacted as text. An answer with nothing to redact passes byte for byte. 2xx
// answers are never touched.
func redactErrorAnswer(resp *http.Response, secret string) {
	if resp.StatusCode < 300 {
		return
	}
	encoding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	if (encoding != "" && encoding != "identity" && encoding != "gzip") || resp.ContentLength > maxRedactedError {
		return
	}
	raw, ok := readAnswer(resp, maxRedactedError)
	if !ok {
		return
	}
	body := raw
	if encoding == "gzip" {
		body = gunzip(raw)
	}
	redacted, changed := redactBody(resp.Header.Get("Content-Type"), body, secret)
	if !changed {
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		return
	}
	resp.Header.Del("Content-Encoding")
	setAnswer(resp, redacted)
}

// redactHeaders replaces the credential the gateway sent (secret) in the values of an answer's
// headers, of any status: an upstream, or a proxy in front of it, may echo the request's
// Authorization. It also removes the headers that name the operator's provider organisation or
// project, which every tenant shares: they are the operator's, as on requests.
func redactHeaders(h http.Header, secret string) {
	delete(h, "Openai-Organization")
	delete(h, "Openai-Project")
	delete(h, "Anthropic-Organization-Id")
	if secret == "" {
		return
	}
	for _, values := range h {
		for i, v := range values {
			if strings.Contains(v, secret) {
				values[i] = strings.ReplaceAll(v, secret, upstream.Redacted)
			}
		}
	}
}

// redactBody redacts an error answer of the given Content-Type: string values of JSON (escapes
// decoded), or the text of anything else. A JSON answer that is not valid JSON is read as text.
func redactBody(contentType string, body []byte, secret string) ([]byte, bool) {
	var secrets []string
	if secret != "" {
		secrets = []string{secret}
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/json" || strings.HasSuffix(mt, "+json") {
		if json.Valid(body) {
			return upstream.RedactJSON(body, secrets...)
		}
	}
	text := upstream.RedactSecrets(string(body), secrets...)
	return []byte(text), text != string(body)
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
