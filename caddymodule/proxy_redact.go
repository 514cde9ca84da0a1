package caddymodule

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
)

// maxRedactedError bounds an upstream error answer that is read whole to redact credentials
// from it. A longer one is refused (502), never passed on unread.
const maxRedactedError = 64 << 10

// redactErrorAnswer removes the credentials of the upstream (secrets: its key, or a Kling
// upstream's secret key and the tokens signed with it, in any form an upstream may echo them) and other credential-like tokens (see upstream.RedactSecrets) from
// a non-2xx answer before it reaches the client: providers quote a masked form of the operator's
// key when they refuse it ("Incorrect API key provided: sk-proj-****abcd"), and a misbehaving one
// may echo it whole. In a JSON answer only string values are changed; any other answer (plain
// text, HTML) is redacted as text. An answer with nothing to redact passes byte for byte. 2xx
// answers are never touched. In the same reading, the answer's text shows the client's model ids
// where it names the upstream's as a word (ids, see providers.ShowIDsInText and
// Dispatch.ErrorModels: OpenAI's 404 "The model `…` does not exist"), a gzip answer's too.
//
// An error answer the redaction cannot read whole is replaced by a 502 in the shape of the endpoint
// the client called (see clientShape), and
// the reason is returned for the log: one in an encoding other than identity or gzip (the
// gateway's transport asks for gzip only, and decodes it itself, but an upstream may send another
// anyway),
// one past maxRedactedError (declared, read, or once decoded), or a gzip body that does not
// decode.
func redactErrorAnswer(resp *http.Response, secrets []string, ids map[string]string) (refused string) {
	if resp.StatusCode < 300 {
		return ""
	}
	encoding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	if encoding != "" && encoding != "identity" && encoding != "gzip" {
		return refuseAnswer(resp, "the upstream's error answer has Content-Encoding "+strconv.Quote(encoding)+", which the redaction cannot read")
	}
	if resp.ContentLength > maxRedactedError {
		return refuseAnswer(resp, "the upstream's error answer is longer than the redaction reads")
	}
	raw, ok := readAnswer(resp, maxRedactedError)
	if !ok {
		return refuseAnswer(resp, "the upstream's error answer is longer than the redaction reads, or could not be read")
	}
	body := raw
	if encoding == "gzip" {
		if body = gunzip(raw); body == nil {
			return refuseAnswer(resp, "the upstream's gzip error answer does not decode within the redaction's bound")
		}
	}
	redacted, changed := redactBody(resp.Header.Get("Content-Type"), body, secrets)
	if shown, named := providers.ShowIDsInText(redacted, ids); named {
		redacted, changed = shown, true
	}
	if !changed {
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		return ""
	}
	resp.Header.Del("Content-Encoding")
	setAnswer(resp, redacted)
	return ""
}

// refuseAnswer replaces an upstream's error answer, unread, by a 502 invalid_response in the
// shape of the endpoint the client called, and returns reason.
func refuseAnswer(resp *http.Response, reason string) string {
	if resp.Body != nil {
		_ = resp.Body.Close() // the answer is dropped: an error closing it loses nothing
	}
	resp.StatusCode, resp.Status = http.StatusBadGateway, "502 Bad Gateway"
	resp.Header = http.Header{"Content-Type": {"application/json"}, "X-Content-Type-Options": {"nosniff"}}
	resp.Trailer = nil
	setAnswer(resp, apierror.Encode(clientShape(resp.Request), errRefusedAnswer))
	return reason
}

var errRefusedAnswer = apierror.New(http.StatusBadGateway, "invalid_response",
	"the upstream answered with an error the gateway could not read; retry later")

// clientShape is the error shape of the endpoint the client called, from Caddy's copy of its
// request: the request to the upstream has the provider's path (a base path such as
// /gemini/v1beta moves it out of its protocol's prefix). OpenAI's when there is no copy.
func clientShape(upstreamReq *http.Request) apierror.Shape {
	if upstreamReq != nil {
		if orig, ok := upstreamReq.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && orig.URL != nil {
			return apierror.ShapeFor(&orig)
		}
	}
	return apierror.OpenAIShape
}

// redactHeaders replaces the upstream's credentials (secrets, see redactErrorAnswer) in the
// values of an answer's headers, of any status: an upstream, or a proxy in front of it, may echo the request's
// Authorization. It also removes the headers that name the operator's provider organisation or
// project, which every tenant shares: they are the operator's, as on requests.
func redactHeaders(h http.Header, secrets []string) {
	for name, values := range h { // one read of the map: deleting the entry just read is safe
		switch name {
		case "Openai-Organization", "Openai-Project", "Anthropic-Organization-Id":
			delete(h, name)
			continue
		}
		for i, v := range values {
			for _, secret := range secrets {
				if secret != "" && strings.Contains(v, secret) {
					v = strings.ReplaceAll(v, secret, upstream.Redacted)
					values[i] = v
				}
			}
		}
	}
}

// redactBody redacts an error answer of the given Content-Type: string values of JSON (escapes
// decoded), or the text of anything else. A JSON answer that is not valid JSON is read as text.
func redactBody(contentType string, body []byte, secrets []string) ([]byte, bool) {
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
