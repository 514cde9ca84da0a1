package apierror

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWrongContentType: the message names what is accepted and the media type received, without
// its parameters, bounded; the multipart hint only for a multipart body.
func TestWrongContentType(t *testing.T) {
	long := "application/" + strings.Repeat("x", 200)
	for ct, want := range map[string]string{
		"":                                  "Content-Type must be application/json; got none",
		"text/plain":                        "Content-Type must be application/json; got text/plain",
		"Text/Plain; charset=utf-8":         "Content-Type must be application/json; got text/plain",
		"multipart/form-data; boundary=abc": "Content-Type must be application/json; got multipart/form-data (send URLs)",
		"application/x-www-form-urlencoded": "Content-Type must be application/json; got application/x-www-form-urlencoded",
		"text/plain; charset":               "Content-Type must be application/json; got text/plain",
		"text/":                             "Content-Type must be application/json; got an unreadable value",
		"<script>":                          "Content-Type must be application/json; got an unreadable value",
		long:                                "Content-Type must be application/json; got " + long[:64] + "…",
		"multipart/mixed; boundary=\"a b\"": "Content-Type must be application/json; got multipart/mixed (send URLs)",
	} {
		r := httptest.NewRequest("POST", "/v1/images/edits", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		e := WrongContentType(r, "invalid_request_body", "application/json", "send URLs")
		if e.Message != want || e.Status != 400 || e.Code != "invalid_request_body" || e.Param != "Content-Type" {
			t.Errorf("Content-Type %q: %+v, want message %q", ct, e, want)
		}
	}
}
