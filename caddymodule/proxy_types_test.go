package caddymodule

import (
	"net/http"
	"testing"
)

// typedSafely types active content and unparsable types text/plain, keeps every other type (and
// none) as the provider sent it, and always adds nosniff.
func TestTypedSafely(t *testing.T) {
	for in, want := range map[string]string{
		"text/html; charset=utf-8": plainText, "Application/XHTML+XML": plainText, "image/svg+xml": plainText,
		"text/xml": plainText, "application/x-javascript": plainText, "text/ecmascript": plainText, "text/html;;": plainText,
		"application/json": "application/json", "application/problem+json": "application/problem+json",
		"text/event-stream": "text/event-stream", "audio/mpeg": "audio/mpeg", "text/plain": "text/plain", "": "",
	} {
		h := http.Header{}
		if in != "" {
			h.Set("Content-Type", in)
		}
		typedSafely(h, new([1]string))
		if got := h.Get("Content-Type"); got != want || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%q: Content-Type %q, nosniff %q; want %q, nosniff", in, got, h.Get("X-Content-Type-Options"), want)
		}
	}
}
