package integration

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestCredentialHeaderSpellingsCaddyKeeps sends a key in credential headers spelled with '_' or
// '.' (X_Api_Key, Api.Key), which servers that hand headers to applications as variables (CGI,
// WSGI, PHP) read as X-Api-Key. Caddy drops such headers unless its servers options
// expected_underscore_headers or expected_dot_headers keep them; kept, they reached the provider
// and the access log with the caller's key. mediagw_auth removes them as it removes X-Api-Key.
func TestCredentialHeaderSpellingsCaddyKeeps(t *testing.T) {
	rec := newRecorder(t)
	base, accessLog, defaultLog := startCredentialsGateway(t, rec.URL,
		"servers {\n\t\texpected_underscore_headers x_api_key x_goog_api_key proxy_authorization\n\t\texpected_dot_headers api.key\n\t}")
	const valid = "mg-logtest-valid-5f1c2e"
	headers := map[string]string{"X_Api_Key": "mg-logtest-bogus-underscore", "X_Goog_Api_Key": "mg-logtest-bogus-googunderscore",
		"Proxy_Authorization": "Basic mg-logtest-bogus-proxyunderscore", "Api.Key": "mg-logtest-bogus-dot"}
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-x","messages":[]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+valid)
	for name, value := range headers {
		req.Header[name] = []string{value} // as spelled: Set would not keep the '.'
	}
	if r := do(t, req); r.status != 200 {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	got := rec.last(t)
	var access, defaults []byte
	waitFor(t, "the access log entry", func() bool {
		access, _ = os.ReadFile(accessLog)
		return strings.Contains(string(access), `"msg":"handled request"`)
	})
	defaults, _ = os.ReadFile(defaultLog)
	for _, secret := range append([]string{valid}, mapValues(headers)...) {
		secret = strings.TrimPrefix(secret, "Basic ")
		if strings.Contains(fmt.Sprint(got.header), secret) {
			t.Errorf("the upstream received %s: %v", secret, got.header)
		}
		if strings.Contains(string(access), secret) || strings.Contains(string(defaults), secret) {
			t.Errorf("a log holds %s:\n%s\n%s", secret, access, defaults)
		}
	}
}

func mapValues(m map[string]string) []string {
	var values []string
	for _, v := range m {
		values = append(values, v)
	}
	return values
}

// TestWebSocketKeyProtocolNeverLogged opens a Realtime WebSocket as OpenAI's SDKs do from a
// browser, with the key in a subprotocol (Sec-WebSocket-Protocol: realtime,
// openai-insecure-api-key.<key>): Caddy's access log printed that header, key included. The
// gateway serves no WebSocket endpoint; the key stays out of every log and the upstream either
// way, with or without a valid Authorization beside it.
func TestWebSocketKeyProtocolNeverLogged(t *testing.T) {
	rec := newRecorder(t)
	base, accessLog, defaultLog := startCredentialsGateway(t, rec.URL, "")
	const valid = "mg-logtest-valid-5f1c2e"
	for _, tc := range []struct {
		bearer bool
		status int
	}{{false, 401}, {true, 404}} {
		req, _ := http.NewRequest("GET", base+"/v1/realtime?model=gpt-x", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Protocol", "realtime, openai-insecure-api-key."+valid+", openai-beta.realtime-v1")
		if tc.bearer {
			req.Header.Set("Authorization", "Bearer "+valid)
		}
		if r := do(t, req); r.status != tc.status {
			t.Errorf("bearer %v: status %d %s, want %d", tc.bearer, r.status, r.body, tc.status)
		}
	}
	var access []byte
	waitFor(t, "two access log entries", func() bool {
		access, _ = os.ReadFile(accessLog)
		return strings.Count(string(access), `"msg":"handled request"`) >= 2
	})
	defaults, _ := os.ReadFile(defaultLog)
	for name, content := range map[string][]byte{"access log": access, "default log": defaults} {
		if strings.Contains(string(content), valid) {
			t.Errorf("the %s holds the key:\n%s", name, content)
		}
	}
	if !strings.Contains(string(access), "openai-beta.realtime-v1") {
		t.Errorf("the other subprotocols were not logged:\n%s", access)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.requests) != 0 {
		t.Errorf("the upstream received %d requests", len(rec.requests))
	}
}

// TestWebSocketKeyProtocolOtherSpellings sends the key subprotocol (openai-insecure-api-key.<key>)
// in Sec_WebSocket_Protocol and Sec.WebSocket.Protocol, which Caddy keeps when its servers
// options expected_underscore_headers or expected_dot_headers name them, and which servers that
// hand headers to applications as variables read as Sec-WebSocket-Protocol: the key subprotocol
// is removed from them as from Sec-WebSocket-Protocol, the other subprotocols kept, so the key
// reaches neither the provider nor a log, with a valid Authorization beside it (forwarded) or
// without one (401). Before, only the hyphen spelling was stripped.
func TestWebSocketKeyProtocolOtherSpellings(t *testing.T) {
	rec := newRecorder(t)
	base, accessLog, defaultLog := startCredentialsGateway(t, rec.URL,
		"servers {\n\t\texpected_underscore_headers sec_websocket_protocol\n\t\texpected_dot_headers sec.websocket.protocol\n\t}")
	const valid = "mg-logtest-valid-5f1c2e"
	headers := map[string]string{"Sec_WebSocket_Protocol": "mg-logtest-bogus-wsunderscore", "Sec.WebSocket.Protocol": "mg-logtest-bogus-wsdot"}
	for _, bearer := range []bool{true, false} {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-x","messages":[]}`))
		req.Header.Set("Content-Type", "application/json")
		if bearer {
			req.Header.Set("Authorization", "Bearer "+valid)
		}
		for name, key := range headers {
			req.Header[name] = []string{"realtime, openai-insecure-api-key." + key + ", openai-beta.realtime-v1"} // as spelled
		}
		if r := do(t, req); bearer && r.status != 200 || !bearer && r.status != 401 {
			t.Fatalf("chat (bearer %v) = %d %s", bearer, r.status, r.body)
		}
	}
	got := rec.last(t)
	for name := range headers {
		if v := got.header.Get(name); v != "" && !strings.Contains(v, "openai-beta.realtime-v1") {
			t.Errorf("the upstream received %s: %q; want the other subprotocols kept", name, v)
		}
	}
	var access []byte
	waitFor(t, "two access log entries", func() bool {
		access, _ = os.ReadFile(accessLog)
		return strings.Count(string(access), `"msg":"handled request"`) >= 2
	})
	defaults, _ := os.ReadFile(defaultLog)
	for _, secret := range append([]string{valid}, mapValues(headers)...) {
		if strings.Contains(fmt.Sprint(got.header), secret) {
			t.Errorf("the upstream received %s: %v", secret, got.header)
		}
		if strings.Contains(string(access), secret) || strings.Contains(string(defaults), secret) {
			t.Errorf("a log holds %s:\n%s\n%s", secret, access, defaults)
		}
	}
	if !strings.Contains(string(access), "openai-beta.realtime-v1") {
		t.Errorf("the other subprotocols were not logged:\n%s", access)
	}
}
