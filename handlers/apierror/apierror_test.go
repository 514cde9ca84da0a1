package apierror

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// blockingBody fails the test if it is read: a body declared too large must be refused from its
// Content-Length alone.
type blockingBody struct{ t *testing.T }

func (b blockingBody) Read([]byte) (int, error) {
	b.t.Error("a body declared larger than the bound was read")
	return 0, io.EOF
}

func TestReadBodyRefusesDeclaredSizeUnread(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.Body, r.ContentLength = io.NopCloser(blockingBody{t}), 10<<30
	if _, err := ReadBody(httptest.NewRecorder(), r, 1<<20, "invalid_request"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("declared 10 GiB: err = %v, want ErrTooLarge", err)
	}
	// Undeclared (chunked) bodies are bounded while read.
	r = httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", 11)))
	r.ContentLength = -1
	if _, err := ReadBody(httptest.NewRecorder(), r, 10, "invalid_request"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("11 bytes chunked past 10: err = %v, want ErrTooLarge", err)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader("0123456789"))
	if body, err := ReadBody(httptest.NewRecorder(), r, 10, "invalid_request"); err != nil || string(body) != "0123456789" {
		t.Fatalf("10 bytes at a bound of 10: %q, %v", body, err)
	}
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		"application/json; =x": false, "text/plain": false, "": false, "application/jsonx": false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if got := IsJSON(r); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
