package apierror

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Marshal encodes v as JSON without HTML escaping, so that "<key>" and "a&b" read as written
// instead of "\u003ckey\u003e" and "a\u0026b". Every JSON answer mediagw writes goes through it.
// The result has no trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// WriteJSON answers v as JSON with the given status, without HTML escaping, with nosniff (see
// OwnJSON). An encoding error
// after the header is sent cannot be reported to the client; it is returned for the caller to
// log.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	OwnJSON(w.Header())
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// OwnJSON types an answer the gateway writes itself as application/json, with
// X-Content-Type-Options: nosniff, so that a browser takes it as that type whatever a provider's
// text quoted in it looks like.
func OwnJSON(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
}

// MsgNotJSONObject is the one wording, on every endpoint, for a body that is not a JSON object
// (malformed JSON, an array, a string …).
const MsgNotJSONObject = "the request body must be a JSON object"

// NotJSONObject is the 400 for a body that is not a JSON object, with the endpoint's error code
// (invalid_request on the video task API, invalid_request_body elsewhere).
func NotJSONObject(code string) *Error {
	return New(http.StatusBadRequest, code, MsgNotJSONObject)
}

// NotUTF8 is the 400 for a body that is not UTF-8, with the endpoint's error code. JSON text
// is UTF-8 (RFC 8259, section 8.1): other bytes are malformed JSON, which a provider would read
// otherwise than the gateway did (as U+FFFD, or as an error).
func NotUTF8(code string) *Error {
	return New(http.StatusBadRequest, code, "the request body must be UTF-8 JSON text")
}

// MethodNotAllowed sets the Allow header and returns the 405 for a known path called with
// another method. The message is the same on every endpoint.
func MethodNotAllowed(w http.ResponseWriter, allowed ...string) *Error {
	list := strings.Join(allowed, ", ")
	w.Header().Set("Allow", list)
	return New(http.StatusMethodNotAllowed, "method_not_allowed", "this endpoint accepts only "+strings.Join(allowed, " or "))
}

// FormatDuration writes d in its shortest form, as an operator would write it: 1m, 1h30m, 90s is
// 1m30s; Go's own form adds zero units (1m0s, 1h0m0s).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
