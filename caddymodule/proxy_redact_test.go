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
