package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// credentialsCaddyfile is the layout of docs/configuration.md with access logging on (to a file) and the
// default log in a file too, at DEBUG level, so that every log line the gateway writes can be
// searched. (At DEBUG, Caddy's reverse_proxy prints the headers of proxied requests, provider
// credentials sent as X-Api-Key or X-Goog-Api-Key included; docs/security.md says to keep DEBUG off in
// production. Client keys must not appear even there.)
const credentialsCaddyfile = `{
	{{globals}}
	log {
		output file {{default_log}}
		level DEBUG
	}
	{{servers}}
	mediagw {
		storage badger {{data}}
		provider anthropic {
			base_url {{rec_url}}/anthropic/v1
			api_key anthropic-upstream-key
			auth_style x-api-key
			models claude-x
		}
		provider gemini {
			base_url {{rec_url}}/v1beta
			api_key gemini-upstream-key
			auth_style x-goog-api-key
			models gemini-x
		}
		provider down {
			base_url http://127.0.0.1:{{dead_port}}/v1beta
			api_key down-upstream-key
			auth_style x-goog-api-key
			models gemini-down
		}
		provider openai {
			base_url {{rec_url}}/openai/v1
			api_key openai-upstream-key
			models gpt-x
		}
		key mg-logtest-valid-5f1c2e {
			id logtest-key
			account acme
		}
		key mg-logtest-disabled-77aa1 {
			account acme
			disabled
		}
	}
}

http://127.0.0.1:{{port}} {
	log {
		output file {{access_log}}
	}
	route {
		mediagw_auth
		mediagw_models /v1/models
		mediagw_route
		@down vars {mediagw.provider} down
		reverse_proxy @down 127.0.0.1:{{dead_port}}
		reverse_proxy {{rec_url}}
	}
}
`

// startCredentialsGateway runs credentialsCaddyfile with upstream as its providers' address and
// servers as its servers options (or none), its logs in a fresh directory. It returns the
// gateway's base URL and the access and default logs' paths.
func startCredentialsGateway(t *testing.T, upstream, servers string) (base, accessLog, defaultLog string) {
	t.Helper()
	dir := t.TempDir()
	accessLog, defaultLog = filepath.Join(dir, "access.log"), filepath.Join(dir, "default.log")
	base, _ = startSimGateway(t, credentialsCaddyfile, map[string]string{
		"rec_url": upstream, "access_log": accessLog, "default_log": defaultLog, "dead_port": fmt.Sprint(freePort(t)),
		"servers": servers,
	})
	return base, accessLog, defaultLog
}

// credentialCase is one request with a secret in one place.
type credentialCase struct {
	name, method, path, query, body string
	header                          map[string]string
	status                          int
}

func TestCredentialsNeverReachLogsOrUpstreams(t *testing.T) {
	rec := newRecorder(t)
	dir := t.TempDir()
	accessLog, defaultLog := filepath.Join(dir, "access.log"), filepath.Join(dir, "default.log")
	base, _ := startSimGateway(t, credentialsCaddyfile, map[string]string{
		"rec_url": rec.URL, "access_log": accessLog, "default_log": defaultLog, "dead_port": fmt.Sprint(freePort(t)),
		"servers": "",
	})
	const (
		valid    = "mg-logtest-valid-5f1c2e"
		disabled = "mg-logtest-disabled-77aa1"
	)
	// Every string below is a secret: none may appear in any log, nor reach an upstream.
	secrets := []string{valid, disabled}
	bogus := func(tag string) string {
		s := "mg-logtest-bogus-" + tag
		secrets = append(secrets, s)
		return s
	}
	claude := `{"model":"claude-x","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	gemini := `{"contents":[{"parts":[{"text":"hi"}]}]}`
	chat := `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }

	cases := []credentialCase{
		{"bearer, valid", "GET", "/v1/models", "", "", bearer(valid), 200},
		{"bearer, unknown", "GET", "/v1/models", "", "", bearer(bogus("bearer")), 401},
		{"x-api-key on messages, valid", "POST", "/v1/messages", "", claude, map[string]string{"X-Api-Key": valid, "Anthropic-Version": "2023-06-01"}, 200},
		{"x-api-key on messages, unknown", "POST", "/v1/messages", "", claude, map[string]string{"X-Api-Key": bogus("xapikey")}, 401},
		{"x-api-key on messages, disabled", "POST", "/v1/messages", "", claude, map[string]string{"X-Api-Key": disabled}, 403},
		{"x-goog-api-key, valid", "POST", "/v1beta/models/gemini-x:generateContent", "", gemini, map[string]string{"X-Goog-Api-Key": valid}, 200},
		{"x-goog-api-key, unknown", "POST", "/v1beta/models/gemini-x:generateContent", "", gemini, map[string]string{"X-Goog-Api-Key": bogus("xgoog")}, 401},
		{"?key=, valid, other parameters kept", "POST", "/v1beta/models/gemini-x:streamGenerateContent", "alt=sse&key=" + valid, gemini, nil, 200},
		{"?key=, unknown", "POST", "/v1beta/models/gemini-x:generateContent", "key=" + bogus("query"), gemini, nil, 401},
		{"?k%65y=, percent-encoded name", "POST", "/v1beta/models/gemini-x:generateContent", "k%65y=" + bogus("encodedname"), gemini, nil, 401},
		{"?key= percent-encoded value", "POST", "/v1beta/models/gemini-x:generateContent", "key=" + url.QueryEscape(valid), gemini, nil, 200},
		{"?key= on the wrong endpoint", "GET", "/v1/models", "key=" + bogus("wrongquery"), "", nil, 401},
		{"x-api-key on the wrong endpoint", "POST", "/v1/chat/completions", "", chat, map[string]string{"X-Api-Key": bogus("wrongheader")}, 401},
		{"x-goog-api-key on the wrong endpoint, with a valid bearer", "POST", "/v1/chat/completions", "", chat,
			map[string]string{"Authorization": "Bearer " + valid, "X-Goog-Api-Key": bogus("stray")}, 200},
		{"two different keys", "POST", "/v1/messages", "", claude, map[string]string{"Authorization": "Bearer " + valid, "X-Api-Key": bogus("second")}, 401},
		{"proxy-authorization and other credential headers", "POST", "/v1/chat/completions", "", chat, map[string]string{
			"Authorization": "Bearer " + valid, "Proxy-Authorization": "Basic " + bogus("proxyauth"),
			"Api-Key": bogus("apikey"), "X-Auth-Token": bogus("authtoken")}, 200},
		{"upstream down: the error path", "POST", "/v1beta/models/gemini-down:generateContent", "key=" + valid, gemini, nil, 502},
		// The Google Gen AI SDK 3.x sends the generate-content family under /v1.
		{"v1 x-goog-api-key, valid", "POST", "/v1/models/gemini-x:generateContent", "", gemini, map[string]string{"X-Goog-Api-Key": valid}, 200},
		{"v1 x-goog-api-key, unknown", "POST", "/v1/models/gemini-x:generateContent", "", gemini, map[string]string{"X-Goog-Api-Key": bogus("v1xgoog")}, 401},
		{"v1 x-goog-api-key, disabled", "POST", "/v1/models/gemini-x:countTokens", "", gemini, map[string]string{"X-Goog-Api-Key": disabled}, 403},
		{"v1 ?key=, valid, other parameters kept", "POST", "/v1/models/gemini-x:streamGenerateContent", "alt=sse&key=" + valid, gemini, nil, 200},
		{"v1 ?key=, unknown", "POST", "/v1/models/gemini-x:countTokens", "key=" + bogus("v1query"), gemini, nil, 401},
		{"v1 embedContent", "POST", "/v1/models/gemini-x:embedContent", "", `{"model":"models/gemini-x","content":{"parts":[{"text":"hi"}]}}`, map[string]string{"X-Goog-Api-Key": valid}, 200},
		{"v1 batchEmbedContents", "POST", "/v1/models/gemini-x:batchEmbedContents", "key=" + valid, `{"requests":[{"model":"models/gemini-x","content":{"parts":[{"text":"hi"}]}}]}`, nil, 200},
		{"v1 x-goog-api-key on a model retrieve is no key", "GET", "/v1/models/gemini-x", "", "", map[string]string{"X-Goog-Api-Key": bogus("v1retrieve")}, 401},
		{"v1 upstream down: the error path", "POST", "/v1/models/gemini-down:generateContent", "key=" + valid, gemini, nil, 502},
		{"no route for the path", "GET", "/v1beta/nothing-here", "key=" + valid, "", nil, 0},
	}
	for _, tc := range cases {
		u := base + tc.path
		if tc.query != "" {
			u += "?" + tc.query
		}
		req, err := http.NewRequest(tc.method, u, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		rec.mu.Lock()
		before := len(rec.requests)
		rec.mu.Unlock()
		r := do(t, req)
		if tc.status != 0 && r.status != tc.status {
			t.Errorf("%s: status %d, want %d; body %s", tc.name, r.status, tc.status, r.body)
		}
		if r.status >= 400 {
			var body map[string]any
			_ = json.Unmarshal(r.body, &body) // a non-object fails the check below
			if e, ok := body["error"].(map[string]any); !ok || e["message"] == "" {
				t.Errorf("%s: error body not in the OpenAI shape: %s", tc.name, r.body)
			}
		}
		rec.mu.Lock()
		got := append([]recorded(nil), rec.requests[before:]...)
		rec.mu.Unlock()
		for _, g := range got {
			for _, s := range secrets {
				if strings.Contains(g.query, s) || strings.Contains(fmt.Sprint(g.header), s) {
					t.Errorf("%s: the upstream received the secret %s: query %q headers %v", tc.name, s, g.query, g.header)
				}
			}
			if strings.Contains(tc.query, "alt=sse") && g.query != "alt=sse" {
				t.Errorf("%s: upstream query %q, want alt=sse", tc.name, g.query)
			}
		}
		if tc.status == 200 && tc.path != "/v1/models" && len(got) == 0 {
			t.Errorf("%s: the upstream received nothing", tc.name)
		}
		if rest, ok := strings.CutPrefix(tc.path, "/v1/models/"); ok && tc.status == 200 {
			// Under /v1 too the provider gets its own base path and key.
			for _, g := range got {
				if g.path != "/v1beta/models/"+rest || g.header.Get("X-Goog-Api-Key") != "gemini-upstream-key" {
					t.Errorf("%s: the upstream got %s with X-Goog-Api-Key %q", tc.name, g.path, g.header.Get("X-Goog-Api-Key"))
				}
			}
		}
	}

	access := awaitAccessEntries(t, accessLog, len(cases))
	if !strings.Contains(string(access), `"user_id":"logtest-key"`) || !strings.Contains(string(access), "alt=sse") {
		t.Errorf("access log entries lack the key id or the kept query:\n%s", access)
	}
	defaults, err := os.ReadFile(defaultLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(defaults), "gemini-down") && !strings.Contains(string(defaults), "handled request with an error") {
		t.Errorf("the failed upstream call was not logged:\n%s", defaults)
	}
	for name, content := range map[string][]byte{"access log": access, "default log": defaults} {
		for _, s := range secrets {
			for _, form := range []string{s, url.QueryEscape(s), strings.TrimPrefix(s, "mg-logtest-")} {
				if strings.Contains(string(content), form) {
					t.Errorf("the %s contains the secret %s (as %q)", name, s, form)
				}
			}
		}
	}
}

// TestLogCredentialsStillHidesKeys turns on Caddy's log_credentials, which makes Caddy print
// Authorization: a Bearer key must still stay out of the log.
func TestLogCredentialsStillHidesKeys(t *testing.T) {
	rec := newRecorder(t)
	dir := t.TempDir()
	accessLog := filepath.Join(dir, "access.log")
	base, _ := startSimGateway(t, credentialsCaddyfile, map[string]string{
		"rec_url": rec.URL, "access_log": accessLog, "default_log": filepath.Join(dir, "default.log"),
		"dead_port": fmt.Sprint(freePort(t)), "servers": "servers {\n\t\tlog_credentials\n\t}",
	})
	for key, status := range map[string]int{"mg-logtest-valid-5f1c2e": 200, "mg-logtest-bogus-logcreds": 401} {
		if r := call(t, "GET", base+"/v1/models", key, nil); r.status != status {
			t.Fatalf("%s: %d %s", key, r.status, r.body)
		}
	}
	var access []byte
	waitFor(t, "two access log entries", func() bool {
		access, _ = os.ReadFile(accessLog)
		return strings.Count(string(access), `"msg":"handled request"`) >= 2
	})
	if !strings.Contains(string(access), `"user_id":"logtest-key"`) {
		t.Errorf("no entry carries the key id:\n%s", access)
	}
	for _, s := range []string{"mg-logtest-valid-5f1c2e", "mg-logtest-bogus-logcreds"} {
		if strings.Contains(string(access), s) {
			t.Errorf("the access log contains %s:\n%s", s, access)
		}
	}
}

// TestSSEStreamsWhenTheGatewayWritesTheLog checks that a request whose access log entry
// mediagw_auth writes itself (a stray X-Api-Key here) still streams event by event.
func TestSSEStreamsWhenTheGatewayWritesTheLog(t *testing.T) {
	rec := newRecorder(t)
	rec.release = make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(rec.release)
		}
	}()
	dir := t.TempDir()
	accessLog := filepath.Join(dir, "access.log")
	base, _ := startSimGateway(t, credentialsCaddyfile, map[string]string{
		"rec_url": rec.URL, "access_log": accessLog, "default_log": filepath.Join(dir, "default.log"),
		"dead_port": fmt.Sprint(freePort(t)), "servers": "",
	})
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-x","stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer mg-logtest-valid-5f1c2e")
	req.Header.Set("X-Api-Key", "mg-logtest-bogus-sse")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := firstEventArrives(t, resp.Body, 10*time.Second)
	close(rec.release)
	released = true
	rest, _ := io.ReadAll(lines)
	if !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("rest of the stream = %q", rest)
	}
	var access []byte
	waitFor(t, "the access log entry", func() bool {
		access, _ = os.ReadFile(accessLog)
		return strings.Contains(string(access), `"msg":"handled request"`)
	})
	if strings.Contains(string(access), "mg-logtest-") || !strings.Contains(string(access), `"status":200`) {
		t.Fatalf("access log:\n%s", access)
	}
}

// TestRequestTrailersNeverReachTheUpstream sends a chunked request whose trailers carry the
// caller's key in every credential place, announced or not: Caddy's reverse_proxy forwards
// request trailers, so without mediagw_auth dropping them the key reached the provider.
func TestRequestTrailersNeverReachTheUpstream(t *testing.T) {
	var mu sync.Mutex
	var trailers []http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the trailers arrive after the body
		mu.Lock()
		trailers = append(trailers, r.Trailer.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	base, _ := startSimGateway(t, credentialsCaddyfile, map[string]string{
		"rec_url": up.URL, "access_log": filepath.Join(dir, "access.log"), "default_log": filepath.Join(dir, "default.log"),
		"dead_port": fmt.Sprint(freePort(t)), "servers": "",
	})
	const key = "mg-logtest-valid-5f1c2e"
	chunk := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	secrets := "X-Api-Key: " + key + "\r\nAuthorization: Bearer " + key + "\r\nX-Goog-Api-Key: " + key + "\r\nX-Note: kept?\r\n"
	for _, tc := range []struct{ name, path, announce string }{
		{"announced, JSON read by the gateway", "/v1/chat/completions", "Trailer: X-Api-Key, Authorization, X-Goog-Api-Key, X-Note\r\n"},
		{"not announced", "/v1/chat/completions", ""},
		{"announced, generate-content", "/v1beta/models/gemini-x:generateContent", "Trailer: X-Goog-Api-Key, Authorization\r\n"},
	} {
		body := `{"model":"gpt-x","messages":[]}`
		if strings.HasPrefix(tc.path, "/v1beta/") {
			body = `{"contents":[]}`
		}
		raw := "POST " + tc.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + key +
			"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n" + tc.announce + "\r\n" +
			chunk(body[:5]) + chunk(body[5:]) + "0\r\n" + secrets + "\r\n"
		if status := rawRequest(t, base, raw); status != http.StatusOK {
			t.Fatalf("%s: status %d", tc.name, status)
		}
		mu.Lock()
		if len(trailers) == 0 {
			mu.Unlock()
			t.Fatalf("%s: the upstream received nothing", tc.name)
		}
		last := trailers[len(trailers)-1]
		trailers = nil
		mu.Unlock()
		if len(last) > 0 {
			t.Errorf("%s: the upstream received request trailers %v", tc.name, last)
		}
	}
}

// rawRequest writes raw to the gateway at base on a new connection and returns the status of
// its answer.
func rawRequest(t *testing.T, base, raw string) int {
	t.Helper()
	return rawMethodRequest(t, base, http.MethodPost, raw)
}

// TestUpstreamGetsItsOwnHost sends a request whose Host names another virtual host: with the
// older per-provider reverse_proxy form (Caddy passes Host through unchanged), the upstream got
// the tenant's Host, so a tenant could pick any virtual host behind the provider's address,
// with the operator's credential attached. Both forms send the upstream's own host.
func TestUpstreamGetsItsOwnHost(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer up.Close()
	want := strings.TrimPrefix(up.URL, "http://")
	for _, proxy := range []string{"reverse_proxy {{rec_url}}", "reverse_proxy {\n\t\t\tdynamic mediagw\n\t\t\ttransport mediagw\n\t\t}"} {
		caddyfile := `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{rec_url}}/v1
			api_key openai-upstream-key
			models gpt-x
		}
		key mg-host-test-1 {
			account acme
		}
	}
}

http://:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		` + proxy + `
	}
}
`
		base, _ := startSimGateway(t, caddyfile, map[string]string{"rec_url": up.URL})
		req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-x","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "admin.internal"
		req.Header.Set("Authorization", "Bearer mg-host-test-1")
		req.Header.Set("Content-Type", "application/json")
		if r := do(t, req); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", proxy, r.status, r.body)
		}
		mu.Lock()
		got := hosts
		hosts = nil
		mu.Unlock()
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: the upstream got Host %v, want %s", proxy, got, want)
		}
	}
}

// awaitAccessEntries waits until the access log at path has n entries (each written after its
// answer), and returns it.
func awaitAccessEntries(t *testing.T, path string, n int) []byte {
	t.Helper()
	var access []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if access, _ = os.ReadFile(path); strings.Count(string(access), `"msg":"handled request"`) >= n {
			return access
		}
	}
	t.Fatalf("the access log has %d entries, want %d:\n%s", strings.Count(string(access), `"msg":"handled request"`), n, access)
	return nil
}
