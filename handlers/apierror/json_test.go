package apierror

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFormatDurationAsWritten(t *testing.T) {
	for in, want := range map[string]string{
		"1m": "1m", "60s": "1m", "90s": "1m30s", "1h": "1h", "1h30m": "1h30m", "24h": "24h",
		"1h0m30s": "1h0m30s", "1.5s": "1.5s", "500ms": "500ms", "10s": "10s",
	} {
		d, err := time.ParseDuration(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestWriteDoesNotEscapeHTML(t *testing.T) {
	w := httptest.NewRecorder()
	Write(w, OpenAIShape, New(401, "missing_api_key", "send Authorization: Bearer <key> & retry"))
	if body := w.Body.String(); !strings.Contains(body, "Bearer <key> & retry") || strings.Contains(body, `\u003c`) {
		t.Fatalf("body = %s", body)
	}
	if got := w.Header().Get("Content-Type"); got != "application/json" {
		t.Fatalf("Content-Type = %q", got)
	}
	b, err := Marshal(map[string]string{"video_url": "https://cdn.example.com/v.mp4?a=1&b=2"})
	if err != nil || string(b) != `{"video_url":"https://cdn.example.com/v.mp4?a=1&b=2"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
}

func TestMethodNotAllowedSetsAllow(t *testing.T) {
	w := httptest.NewRecorder()
	e := MethodNotAllowed(w, "GET", "HEAD")
	if w.Header().Get("Allow") != "GET, HEAD" || e.Status != 405 || e.Message != "this endpoint accepts only GET or HEAD" {
		t.Fatalf("Allow %q, error %+v", w.Header().Get("Allow"), e)
	}
}
