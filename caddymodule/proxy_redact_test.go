package caddymodule

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

// An answer's headers never show the operator's key, nor which of the operator's provider
// organisations and projects served it (every tenant shares them).
func TestRedactHeadersHidesTheOperatorsAccount(t *testing.T) {
	h := http.Header{}
	h.Set("Openai-Organization", "operator-org")
	h.Set("Openai-Project", "proj_operator")
	h.Set("Anthropic-Organization-Id", "5e1f0c3a-operator")
	h.Set("X-Echo", "Bearer sk-operator-secret")
	h.Set("Content-Type", "application/json")
	redactHeaders(h, []string{"sk-operator-secret"})
	for _, name := range []string{"Openai-Organization", "Openai-Project", "Anthropic-Organization-Id"} {
		if v := h.Get(name); v != "" {
			t.Errorf("%s = %q reached the client", name, v)
		}
	}
	if h.Get("X-Echo") == "Bearer sk-operator-secret" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", h)
	}
}

// Every secret is replaced in every value of every header, each value by all of them in turn (a
// Kling upstream has several), in a header map past a map's first group of eight.
func TestRedactHeadersRedactsEverySecretInEveryValue(t *testing.T) {
	h := http.Header{"Openai-Organization": {"operator-org"}, "X-Both": {"secret-key token-abc", "plain"}}
	for i := range 10 {
		h["X-Other-"+strings.Repeat("a", i+1)] = []string{"kept", "echo token-abc"}
	}
	redactHeaders(h, []string{"", "secret-key", "token-abc"})
	if got := h["X-Both"]; len(got) != 2 || strings.Contains(got[0], "secret-key") || strings.Contains(got[0], "token-abc") || got[1] != "plain" {
		t.Errorf("X-Both = %q", got)
	}
	for name, values := range h {
		if name == "Openai-Organization" {
			t.Error("Openai-Organization reached the client")
		}
		for _, v := range values {
			if strings.Contains(v, "token-abc") || strings.Contains(v, "secret-key") {
				t.Errorf("%s: %q", name, v)
			}
		}
	}
	if len(h) != 11 || h["X-Other-a"][0] != "kept" {
		t.Errorf("headers %v", h)
	}
}

// An error answer names the client's model id where it named the upstream's, gzip-encoded too
// (read once, with the redaction); one that names neither a secret nor a renamed id passes byte
// for byte, still encoded.
func TestErrorAnswerShowsTheClientsIDOnceRead(t *testing.T) {
	zipped := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(s))
		_ = zw.Close()
		return b.Bytes()
	}
	answer := func(body []byte, encoding string) *http.Response {
		h := http.Header{"Content-Type": {"application/json"}}
		if encoding != "" {
			h.Set("Content-Encoding", encoding)
		}
		return &http.Response{StatusCode: 404, Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
	}
	ids := map[string]string{"up-chat": "chat-alias"}
	const named = `{"error":{"message":"The model ` + "`up-chat`" + ` does not exist","code":"model_not_found"}}`
	for _, encoding := range []string{"", "gzip"} {
		body := []byte(named)
		if encoding == "gzip" {
			body = zipped(named)
		}
		resp := answer(body, encoding)
		if reason := redactErrorAnswer(resp, []string{"sk-operator"}, ids); reason != "" {
			t.Fatalf("%q: refused: %s", encoding, reason)
		}
		got, _ := io.ReadAll(resp.Body)
		if want := strings.ReplaceAll(named, "up-chat", "chat-alias"); string(got) != want || resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("%q: %s (Content-Encoding %q), want %s", encoding, got, resp.Header.Get("Content-Encoding"), want)
		}
	}
	plain := zipped(`{"error":{"message":"no such model","code":"model_not_found"}}`)
	resp := answer(plain, "gzip")
	if reason := redactErrorAnswer(resp, []string{"sk-operator"}, ids); reason != "" {
		t.Fatal(reason)
	}
	if got, _ := io.ReadAll(resp.Body); !bytes.Equal(got, plain) || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("an answer with nothing to change was rewritten: %q", got)
	}
}
