package integration

import (
	"encoding/base64"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyCopiesInPathAndBasicAuthNeverLeave: the caller's key sent again in the path (a client
// whose base URL holds its key, percent-encoded or not) or as Basic credentials in a header the
// gateway does not list reaches neither the provider nor the access log (docs/security.md: keys
// are never logged, never forwarded). Each subtest says where the key reached.
func TestKeyCopiesInPathAndBasicAuthNeverLeave(t *testing.T) {
	rec := newRecorder(t)
	accessLog := filepath.Join(t.TempDir(), "access.log")
	base, _ := startSimGateway(t, keyCopiesCaddyfile, map[string]string{"rec_url": rec.URL, "access_log": accessLog})
	const key = "mg-copied-key-6b1d"
	secret := strings.TrimPrefix(key, "mg-")
	chat := `{"model":"rec-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`
	cases := []struct {
		name, method, path, body string
		header                   http.Header
	}{
		// A client whose base URL holds its key (https://gw/KEY/v1), as some gateways take it.
		{"key in the path (404)", "GET", "/" + key + "/v1/models", "", nil},
		{"key percent-encoded in the path", "GET", "/v1/models/%6D%67%2D" + secret, "", nil},
		{"key in a chat path segment", "POST", "/v1/chat/completions/" + key, chat, nil},
		{"Basic auth in another header", "POST", "/v1/chat/completions", chat,
			http.Header{"X-Upstream-Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+key))}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec.mu.Lock()
			before := len(rec.requests)
			rec.mu.Unlock()
			req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range c.header {
				req.Header[k] = v
			}
			req.Header.Set("Authorization", "Bearer "+key)
			r := do(t, req)
			t.Logf("status %d %.200s", r.status, r.body)
			rec.mu.Lock()
			got := append([]recorded(nil), rec.requests[before:]...)
			rec.mu.Unlock()
			for _, g := range got {
				if strings.Contains(g.path, secret) || strings.Contains(g.query, secret) {
					t.Errorf("the provider got the key in its path: %s?%s", g.path, g.query)
				}
				for name, values := range g.header {
					joined := strings.Join(values, ",")
					if strings.Contains(joined, secret) {
						t.Errorf("the provider got the key in %s", name)
					}
					if strings.HasPrefix(joined, "Basic ") {
						if d, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(joined, "Basic ")); strings.Contains(string(d), secret) {
							t.Errorf("the provider got the key base64-encoded in %s: %s", name, joined)
						}
					}
				}
			}
		})
	}
	client.CloseIdleConnections()
	access := awaitAccessEntries(t, accessLog, len(cases))
	for _, line := range strings.Split(string(access), "\n") {
		if strings.Contains(line, secret) {
			t.Errorf("the access log holds the client's key: %.400s", line)
		}
	}
}
