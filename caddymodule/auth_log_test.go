package caddymodule

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/mediagw/mediagw/handlers/auth"
)

func TestAccessLoggerNamesFollowCaddy(t *testing.T) {
	cfg := &caddyhttp.ServerLogConfig{
		DefaultLoggerName: "default",
		LoggerNames:       map[string]caddyhttp.StringArray{"api.example.com": {"api"}, "*.example.com": {"wild"}},
		SkipHosts:         []string{"quiet.example.org"},
	}
	for host, want := range map[string][]string{
		"api.example.com": {"api"}, "cdn.example.com": {"wild"}, "other.org": {"default"},
	} {
		if got := hostLoggerNames(cfg, host); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", host, got, want)
		}
	}
	for host, want := range map[string]bool{
		"api.example.com:8443": true, "quiet.example.org": false, "other.org": true,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		if got := loggedByCaddy(cfg, r); got != want {
			t.Errorf("loggedByCaddy(%s) = %v", host, got)
		}
	}
	cfg.SkipUnmappedHosts = true
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "other.org"
	if loggedByCaddy(cfg, r) {
		t.Error("an unmapped host was logged with skip_unmapped_hosts")
	}
}

func TestExposes(t *testing.T) {
	quiet := &caddyhttp.Server{Logs: &caddyhttp.ServerLogConfig{}}
	loud := &caddyhttp.Server{Logs: &caddyhttp.ServerLogConfig{ShouldLogCredentials: true}}
	for _, tc := range []struct {
		target, header string
		srv            *caddyhttp.Server
		want           bool
	}{
		{"/v1/models", "Authorization", quiet, false},
		{"/v1/models", "Proxy-Authorization", quiet, false},
		{"/v1/models", "Authorization", loud, true},
		{"/v1/messages", "X-Api-Key", quiet, true},
		{"/v1beta/x", "X-Goog-Api-Key", quiet, true},
		{"/v1beta/x?key=a", "", quiet, true},
		{"/v1beta/x?K%45Y=a", "", quiet, true},
		{"/v1beta/x?keys=a", "", quiet, false},
		{"/v1/models/g:generateContent", "X-Goog-Api-Key", quiet, true},
		{"/v1/models/g:streamGenerateContent?alt=sse&key=a", "", quiet, true},
		{"/v1/models", "", nil, false},
		{"/v1/models", "", loud, false},
		{"/v1/models", "X_Api_Key", quiet, true},
		{"/v1/models", "authorization", quiet, true}, // Caddy redacts the canonical spelling only
		{"/v1/realtime", "Sec-WebSocket-Protocol", quiet, true},
		{"/v1/realtime?model=m", "Sec-Websocket-Protocol", quiet, false},
	} {
		r := httptest.NewRequest("GET", tc.target, nil)
		switch tc.header {
		case "":
		case "Sec-WebSocket-Protocol":
			r.Header[tc.header] = []string{"realtime, openai-insecure-api-key.secret"}
		case "Sec-Websocket-Protocol":
			r.Header[tc.header] = []string{"realtime"}
		default:
			r.Header[tc.header] = []string{"secret"}
		}
		if got := exposes(auth.Strip(r), tc.srv); got != tc.want {
			t.Errorf("%s %s: exposes = %v, want %v", tc.target, tc.header, got, tc.want)
		}
	}
}

// TestWithoutSignedLocation: the access log prints a redirect's address without its query or
// user information (a presigned GET's signature), and the answer's own headers stay as sent.
func TestWithoutSignedLocation(t *testing.T) {
	for _, tc := range []struct{ sent, logged string }{
		{"https://s3.example.com/media/kept/a/video.mp4?X-Amz-Signature=abc&X-Amz-Credential=AKIA", "https://s3.example.com/media/kept/a/video.mp4?REDACTED"},
		{"https://user:secret@cdn.example.com/v.mp4", "https://cdn.example.com/v.mp4"},
		{"https://cdn.example.com/v.mp4?", "https://cdn.example.com/v.mp4?REDACTED"},
		{"https://cdn.example.com/v.mp4", "https://cdn.example.com/v.mp4"},
		{"https://cdn.example.com/%zz?sig=1", "REDACTED"},
	} {
		for _, name := range []string{"Location", "Content-Location"} {
			sent := http.Header{name: {tc.sent}, "Cache-Control": {"private, no-store"}}
			logged := withoutSignedLocation(sent)
			if got := logged.Get(name); got != tc.logged {
				t.Errorf("%s %q logged as %q; want %q", name, tc.sent, got, tc.logged)
			}
			if sent.Get(name) != tc.sent || logged.Get("Cache-Control") != "private, no-store" {
				t.Errorf("the answer's headers changed: %v, logged %v", sent, logged)
			}
		}
	}
}
