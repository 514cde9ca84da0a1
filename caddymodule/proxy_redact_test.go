package caddymodule

import (
	"net/http"
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
	redactHeaders(h, "sk-operator-secret")
	for _, name := range []string{"Openai-Organization", "Openai-Project", "Anthropic-Organization-Id"} {
		if v := h.Get(name); v != "" {
			t.Errorf("%s = %q reached the client", name, v)
		}
	}
	if h.Get("X-Echo") == "Bearer sk-operator-secret" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", h)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "gzip": true, "GZIP;q=0.5": true, "gzip;q=0": false, "gzip; q=0.000": false,
		"br, zstd": false, "deflate, gzip;q=1.0": true, "*": true, "*;q=0": false, "identity": false,
	} {
		if got := acceptsGzip([]string{v}); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", v, got, want)
		}
	}
}
