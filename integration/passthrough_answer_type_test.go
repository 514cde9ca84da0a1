package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPassThroughAnswersNeverRenderAsPages: a hostile provider that types a pass-through answer
// (through transport mediagw)
// as active content (text/html, SVG, XML, JavaScript), a success or an error the gateway reads to
// redact, has it reach the client as text/plain with nosniff, its body as sent: a browser never
// runs it as a page or a script on the gateway's origin. JSON and event-stream answers keep their
// type, with nosniff. Before, the provider's type passed on.
func TestPassThroughAnswersNeverRenderAsPages(t *testing.T) {
	const page = `<html><script>alert(document.cookie)</script></html>`
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short local body
		switch {
		case strings.Contains(string(body), "svg error"):
			w.Header().Set("Content-Type", "image/svg+xml")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
		case strings.Contains(string(body), "html error"):
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, page)
		case strings.Contains(string(body), "html"):
			w.Header().Set("Content-Type", "TEXT/HTML")
			io.WriteString(w, page)
		case strings.Contains(string(body), "script"):
			w.Header().Set("Content-Type", "application/javascript")
			io.WriteString(w, `alert(1)`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`)
		}
	}))
	t.Cleanup(provider.Close)
	// The provider's answers through transport mediagw, which reads error answers to redact them.
	caddyfile := strings.Replace(credentialsCaddyfile, "reverse_proxy {{rec_url}}", "reverse_proxy {\n\t\t\tdynamic mediagw\n\t\t\ttransport mediagw\n\t\t}", 1)
	base, _ := startSimGateway(t, caddyfile, map[string]string{
		"rec_url": provider.URL, "access_log": t.TempDir() + "/access.log", "default_log": t.TempDir() + "/default.log",
		"dead_port": fmt.Sprint(freePort(t)), "servers": "",
	})
	for _, tc := range []struct {
		say, wantType string
		status        int
	}{
		{"html", "text/plain; charset=utf-8", 200},
		{"script", "text/plain; charset=utf-8", 200},
		{"svg error", "text/plain; charset=utf-8", 400},
		{"json", "application/json", 200},
		{"html error", "text/plain; charset=utf-8", 500}, // last: a 5xx marks the upstream failing
	} {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-x","messages":[{"role":"user","content":"`+tc.say+`"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer mg-logtest-valid-5f1c2e")
		r := do(t, req)
		if r.status != tc.status || r.header.Get("Content-Type") != tc.wantType || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d, Content-Type %q, X-Content-Type-Options %q; want %d %q, nosniff (%s)",
				tc.say, r.status, r.header.Get("Content-Type"), r.header.Get("X-Content-Type-Options"), tc.status, tc.wantType, r.body)
		}
	}
}
