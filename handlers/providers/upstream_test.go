package providers

import (
	"net/http"
	"testing"
)

// The caller's credentials and the headers that pick the operator's organisation or project
// never reach the upstream; the upstream's own key does, in its auth style.
func TestSetCredentialsReplacesTheCallersHeaders(t *testing.T) {
	h := http.Header{}
	for _, name := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "OpenAI-Organization", "OpenAI-Project", "X-Goog-User-Project"} {
		h.Set(name, "tenant-value")
	}
	setCredentials(h, "operator-key", AuthXAPIKey)
	for name, values := range h {
		for _, v := range values {
			if v == "tenant-value" {
				t.Errorf("%s: the caller's value reached the upstream", name)
			}
		}
	}
	if h.Get("X-Api-Key") != "operator-key" {
		t.Errorf("X-Api-Key = %q, want the upstream's key", h.Get("X-Api-Key"))
	}
}
