package hdr

import (
	"net/http"
	"testing"
)

// Under a canonical name, Get and Del do what http.Header's methods do.
func TestGetAndDelAgreeWithHeaderMethods(t *testing.T) {
	h := http.Header{}
	h.Add("Content-Type", "application/json")
	h.Add("Content-Type", "text/plain")
	h.Set("X-Content-Type-Options", "nosniff")
	for _, name := range []string{"Content-Type", "X-Content-Type-Options", "Accept-Encoding"} {
		if got, want := Get(h, name), h.Get(name); got != want {
			t.Errorf("Get(%q) = %q, want %q", name, got, want)
		}
	}
	Del(h, "Content-Type")
	if len(h) != 1 || h.Get("Content-Type") != "" {
		t.Errorf("after Del: %v", h)
	}
}
