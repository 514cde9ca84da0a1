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
		"":                                     "Content-Type must be application/json; got none",
		"text/plain":                           "Content-Type must be application/json; got text/plain",
		"Text/Plain; charset=utf-8":            "Content-Type must be application/json; got text/plain",
		"multipart/form-data; boundary=abc":    "Content-Type must be application/json; got multipart/form-data (send URLs)",
		"application/x-www-form-urlencoded":    "Content-Type must be application/json; got application/x-www-form-urlencoded",
		"text/plain; charset":                  "Content-Type must be application/json; got text/plain",
		"text/":                                "Content-Type must be application/json; got an unreadable value",
		"<script>":                             "Content-Type must be application/json; got an unreadable value",
		long:                                   "Content-Type must be application/json; got " + long[:64] + "…",
		"multipart/mixed; boundary=\"a b\"":    "Content-Type must be application/json; got multipart/mixed (send URLs)",
		"application/json; charset=latin1":     "Content-Type must be application/json; got application/json; charset=latin1 (a JSON body is UTF-8: charset may be utf-8 or left out)",
		"Application/JSON; CHARSET=\"UTF-16\"": "Content-Type must be application/json; got application/json; charset=utf-16 (a JSON body is UTF-8: charset may be utf-8 or left out)",
		"application/json; charset=\"a<b>\"":   "Content-Type must be application/json; got application/json with an unreadable charset (a JSON body is UTF-8: charset may be utf-8 or left out)",
		"application/json; charset=utf-8; x":   "Content-Type must be application/json; got application/json with unreadable parameters",
		"text/plain; charset=latin1":           "Content-Type must be application/json; got text/plain",
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
