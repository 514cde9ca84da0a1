package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// transportCredentialsCaddyfile is Caddyfile.example's gateway site (its handlers straight in the
// site block, no route block) with three providers on one fake upstream, one for each credential
// style, and both logs in files, the default one at DEBUG, where reverse_proxy prints the
// headers of each round trip.
const transportCredentialsCaddyfile = `{
	{{globals}}
	log {
		output file {{default_log}}
		level DEBUG
	}
	mediagw {
		storage badger {{data}}
		provider oa {
			base_url {{up}}/oa/v1
			api_key rv-oa-upstream-key
			models rv-chat
		}
		provider an {
			base_url {{up}}/an/v1
			api_key rv-an-upstream-key
			auth_style x-api-key
			models rv-claude
		}
		provider ge {
			base_url {{up}}/ge/v1beta
			api_key rv-ge-upstream-key
			auth_style x-goog-api-key
			models rv-gemini
		}
		key mg-review-valid-3c9d {
			account review
		}
	}
}

http://127.0.0.1:{{port}} {
	log {
		output file {{access_log}}
	}
	mediagw_auth
	mediagw_models
	mediagw_route
	reverse_proxy {
		dynamic mediagw
		transport mediagw
		lb_policy first
		lb_retries 2
	}
}
`

// clearedRequestHeaders are the headers no client may send a provider (providers.ClearCredentials
// and auth.CredentialHeaders), each with a value a test can look for: rv-secret-… for a
// credential, which no log may show either, rv-cleared-… for the others. (The method overrides,
// cleared too, are refused before: see TestPassThroughHostileClients.)
var clearedRequestHeaders = map[string]string{
	"Proxy-Authorization":  "Basic rv-secret-proxyauth",
	"Api-Key":              "rv-secret-apikey",
	"X-Auth-Token":         "rv-secret-authtoken",
	"X-Amz-Security-Token": "rv-secret-amztoken",
	"Cookie":               "session=rv-cleared-cookie",
	"Openai-Organization":  "rv-cleared-org",
	"Openai-Project":       "rv-cleared-project",
	"X-Goog-User-Project":  "rv-cleared-userproject",
	"X-Original-Url":       "/v1/rv-cleared-originalurl",
	"X-Rewrite-Url":        "/v1/rv-cleared-rewriteurl",
	"Forwarded":            "for=10.0.0.1;by=rv-cleared-forwarded",
	"X-Real-Ip":            "10.0.0.2 rv-cleared-realip",
	"True-Client-Ip":       "10.0.0.3 rv-cleared-trueclientip",
	"X-Client-Ip":          "10.0.0.4 rv-cleared-clientip",
	"Cf-Connecting-Ip":     "10.0.0.5 rv-cleared-cfip",
	"X-Rv-Hop":             "rv-cleared-hop", // named by Connection below
}

// credentialEchoUpstream answers each provider's path in its shape, after recording what it
// received, with headers that echo the credential it got (twice in one value, and in a second
// value), a cookie, and the organisation headers that name the operator's account.
type credentialEchoUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	received []recorded
}

func newCredentialEchoUpstream(t *testing.T) *credentialEchoUpstream {
	up := &credentialEchoUpstream{}
	up.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		up.mu.Lock()
		up.received = append(up.received, recorded{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), bodyLen: int(n)})
		up.mu.Unlock()
		got := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key") + r.Header.Get("X-Goog-Api-Key")
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Add("X-Echo-Credential", "first")
		h.Add("X-Echo-Credential", "you sent "+got+" and "+got)
		h.Set("Www-Authenticate", `Bearer realm="rv", error="insufficient_quota", key="`+got+`"`)
		h.Set("Set-Cookie", "__cf_bm=rv-upstream-cookie; Path=/")
		h.Set("Openai-Organization", "rv-operator-org")
		h.Set("Openai-Project", "rv-operator-project")
		h.Set("Anthropic-Organization-Id", "rv-operator-anorg")
		switch {
		case strings.HasPrefix(r.URL.Path, "/oa/"):
			fmt.Fprint(w, `{"id":"chatcmpl-rv","object":"chat.completion","created":1,"model":"rv-chat","choices":[{"index":0,`+
				`"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
		case strings.HasPrefix(r.URL.Path, "/an/"):
			fmt.Fprint(w, `{"id":"msg_rv","type":"message","role":"assistant","model":"rv-claude","content":[{"type":"text","text":"done"}],`+
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}`)
		default:
			fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"done"}]},"finishReason":"STOP","index":0}],`+
				`"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"modelVersion":"rv-gemini"}`)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

func (up *credentialEchoUpstream) since(n int) []recorded {
	up.mu.Lock()
	defer up.mu.Unlock()
	return append([]recorded(nil), up.received[n:]...)
}

func (up *credentialEchoUpstream) count() int {
	up.mu.Lock()
	defer up.mu.Unlock()
	return len(up.received)
}

// TestTransportSendsOnlyTheUpstreamsCredential sends pass-through requests through the mediagw
// transport, laid out as Caddyfile.example, with every header a client may not send a provider
// (credentials in every place and spelling, twice with different values, organisation and
// project pickers, method and path overrides, client addresses, cookies, a header named by
// Connection, and the upstream credential's own header name), with few headers and with many
// (the transport copies the two differently). The upstream gets its own credential, once, and
// nothing else of those; the client gets no upstream credential, cookie or organisation back;
// neither log, DEBUG included, holds a client secret or an upstream key.
func TestTransportSendsOnlyTheUpstreamsCredential(t *testing.T) {
	up := newCredentialEchoUpstream(t)
	dir := t.TempDir()
	accessLog, defaultLog := filepath.Join(dir, "access.log"), filepath.Join(dir, "default.log")
	base, _ := startSimGateway(t, transportCredentialsCaddyfile, map[string]string{
		"up": up.URL, "access_log": accessLog, "default_log": defaultLog,
	})
	const valid = "mg-review-valid-3c9d"
	upstreamKeys := map[string]string{"oa": "Bearer rv-oa-upstream-key", "an": "rv-an-upstream-key", "ge": "rv-ge-upstream-key"}
	upstreamHeader := map[string]string{"oa": "Authorization", "an": "X-Api-Key", "ge": "X-Goog-Api-Key"}
	chat := `{"model":"rv-chat","messages":[{"role":"user","content":"hi"}]}`
	claude := `{"model":"rv-claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	gemini := `{"contents":[{"parts":[{"text":"hi"}]}]}`

	type hostileCase struct {
		name, provider, path, query, body string
		// header is set as spelled (the map directly, so that a name keeps its case on the wire).
		header map[string][]string
		many   bool // add every clearedRequestHeaders entry too
	}
	cases := []hostileCase{
		{name: "chat, few headers", provider: "oa", path: "/v1/chat/completions", body: chat, header: map[string][]string{
			"Authorization": {"Bearer " + valid}, "Cookie": {"session=rv-cleared-cookie"}, "Openai-Organization": {"rv-cleared-org"}}},
		{name: "chat, every cleared header, odd case and duplicates", provider: "oa", path: "/v1/chat/completions", body: chat, many: true,
			header: map[string][]string{"authorization": {"Bearer " + valid}, "x-API-key": {"rv-secret-xapikey-1", "rv-secret-xapikey-2"},
				"X-GOOG-API-KEY": {"rv-secret-xgoog"}, "Accept-Encoding": {"br"}}},
		{name: "messages, the upstream credential's name from the client", provider: "an", path: "/v1/messages", body: claude, many: true,
			header: map[string][]string{"X-Api-Key": {valid}, "Authorization": {"Bearer " + valid}, "Anthropic-Version": {"2023-06-01"}}},
		{name: "generateContent, key in the header and the query", provider: "ge", path: "/v1beta/models/rv-gemini:generateContent",
			query: "key=" + valid + "&alt=json", body: gemini, many: true,
			header: map[string][]string{"X-Goog-Api-Key": {valid}, "Cookie": {"a=rv-cleared-cookie", "b=rv-cleared-cookie2"}}},
		{name: "generateContent, few headers", provider: "ge", path: "/v1/models/rv-gemini:generateContent", body: gemini,
			header: map[string][]string{"x-goog-api-key": {valid}, "X-Goog-User-Project": {"rv-cleared-userproject"}}},
	}
	secrets := []string{valid, "rv-secret-", "rv-oa-upstream-key", "rv-an-upstream-key", "rv-ge-upstream-key"}
	for _, tc := range cases {
		u := base + tc.path
		if tc.query != "" {
			u += "?" + tc.query
		}
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header["Content-Type"] = []string{"application/json"}
		if tc.many {
			for name, value := range clearedRequestHeaders {
				req.Header[name] = []string{value}
			}
			req.Header["Connection"] = []string{"X-Rv-Hop"}
			for i := range 6 { // more names than the transport clones whole
				req.Header[fmt.Sprintf("X-Rv-Extra-%d", i)] = []string{"kept"}
			}
		}
		for name, values := range tc.header {
			req.Header[name] = values
		}
		before := up.count()
		r := do(t, req)
		if r.status != http.StatusOK {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
			continue
		}
		got := up.since(before)
		if len(got) != 1 {
			t.Errorf("%s: the upstream received %d requests, want 1", tc.name, len(got))
			continue
		}
		g := got[0]
		name := upstreamHeader[tc.provider]
		if v := g.header[name]; len(v) != 1 || v[0] != upstreamKeys[tc.provider] {
			t.Errorf("%s: the upstream got %s %q, want its own credential once", tc.name, name, v)
		}
		for other := range upstreamKeys {
			if n := upstreamHeader[other]; n != name && len(g.header[n]) > 0 {
				t.Errorf("%s: the upstream got %s %q besides its own credential", tc.name, n, g.header[n])
			}
		}
		for cleared := range clearedRequestHeaders {
			if v, ok := g.header[cleared]; ok {
				t.Errorf("%s: the upstream got %s %q", tc.name, cleared, v)
			}
		}
		for hname, values := range g.header {
			for _, v := range values {
				for _, s := range []string{valid, "rv-secret-", "rv-cleared-"} {
					if strings.Contains(v, s) {
						t.Errorf("%s: the upstream got the client's %s: %q", tc.name, hname, v)
					}
				}
			}
		}
		if strings.Contains(g.query, valid) || strings.Contains(g.query, "key=") {
			t.Errorf("%s: the upstream got the query %q", tc.name, g.query)
		}
		if ae := g.header.Get("Accept-Encoding"); ae == "br" {
			t.Errorf("%s: the client's Accept-Encoding reached the upstream", tc.name)
		}
		if tc.many && g.header.Get("X-Rv-Extra-5") != "kept" {
			t.Errorf("%s: another header was lost on the way: %v", tc.name, g.header)
		}
		// The answer: no upstream credential in any header, no cookie, no organisation.
		for hname, values := range r.header {
			for _, v := range values {
				for _, s := range secrets {
					if strings.Contains(v, s) {
						t.Errorf("%s: the client got %s: %q", tc.name, hname, v)
					}
				}
			}
		}
		for _, hname := range []string{"Set-Cookie", "Openai-Organization", "Openai-Project", "Anthropic-Organization-Id"} {
			if v, ok := r.header[hname]; ok {
				t.Errorf("%s: the client got %s %q", tc.name, hname, v)
			}
		}
		if v := r.header.Values("X-Echo-Credential"); len(v) != 2 || v[0] != "first" || !strings.Contains(v[1], "you sent ") {
			t.Errorf("%s: the upstream's other headers were lost: %q", tc.name, v)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: the answer is not nosniff: %v", tc.name, r.header)
		}
	}

	access := awaitAccessEntries(t, accessLog, len(cases))
	defaults, err := os.ReadFile(defaultLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(defaults), "upstream roundtrip") {
		t.Fatalf("the DEBUG log has no round trip of reverse_proxy's:\n%s", defaults)
	}
	for logName, content := range map[string][]byte{"access log": access, "default log": defaults} {
		for _, s := range secrets {
			if i := strings.Index(string(content), s); i >= 0 {
				t.Errorf("the %s holds %s: …%s…", logName, s, content[max(i-200, 0):min(i+100, len(content))])
			}
		}
	}
}

// failoverCredentialsCaddyfile is one provider with two upstreams, each with its own key: main
// first, spare when main fails (docs/providers.md), in Caddyfile.example's layout, DEBUG on.
const failoverCredentialsCaddyfile = `{
	{{globals}}
	log {
		output file {{default_log}}
		level DEBUG
	}
	mediagw {
		storage badger {{data}}
		provider oa {
			models rv-failover-chat
			upstream main {
				base_url {{up}}/main/v1
				api_key rv-main-upstream-key
			}
			upstream spare {
				base_url {{up}}/spare/v1
				api_key rv-spare-upstream-key
				priority 1
			}
		}
		key mg-review-failover-0a4e {
			account review
		}
	}
}

` + transportSite

// transportSite is Caddyfile.example's gateway site for pass-through alone: its handlers
// straight in the site block (no route block), one reverse_proxy with the mediagw upstream
// source and transport, failing over to the next upstream.
const transportSite = `
http://127.0.0.1:{{port}} {
	mediagw_auth
	mediagw_route
	reverse_proxy {
		dynamic mediagw
		transport mediagw
		lb_policy first
		lb_retries 2
	}
}
`

// TestFailoverAttemptsCarryOnlyTheirOwnCredential: a request whose first upstream answers 503 is
// sent again to the next one (one request, two attempts of the transport on it): each attempt
// carries its own upstream's key, once, and never the other's or a client's credential; the
// client's answer and the DEBUG log show no key.
func TestFailoverAttemptsCarryOnlyTheirOwnCredential(t *testing.T) {
	var mu sync.Mutex
	var got []recorded
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, recorded{method: r.Method, path: r.URL.Path, header: r.Header.Clone()})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo-Credential", r.Header.Get("Authorization"))
		if strings.HasPrefix(r.URL.Path, "/main/") {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error","code":null}}`)
			return
		}
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(up.Close)
	defaultLog := filepath.Join(t.TempDir(), "default.log")
	base, _ := startSimGateway(t, failoverCredentialsCaddyfile, map[string]string{"up": up.URL, "default_log": defaultLog})
	const valid = "mg-review-failover-0a4e"
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"rv-failover-chat","messages":[]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+valid)
	for name, value := range clearedRequestHeaders {
		req.Header[name] = []string{value}
	}
	req.Header["Connection"] = []string{"X-Rv-Hop"}
	r := do(t, req)
	if r.status != http.StatusOK {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || !strings.HasPrefix(got[0].path, "/main/") || !strings.HasPrefix(got[1].path, "/spare/") {
		t.Fatalf("the upstreams got %d requests (%v), want main's then spare's", len(got), got)
	}
	for i, want := range []string{"Bearer rv-main-upstream-key", "Bearer rv-spare-upstream-key"} {
		if v := got[i].header["Authorization"]; len(v) != 1 || v[0] != want {
			t.Errorf("attempt %d got Authorization %q, want %q once", i+1, v, want)
		}
		for name, values := range got[i].header {
			for _, v := range values {
				for _, s := range []string{valid, "rv-secret-", "rv-cleared-"} {
					if strings.Contains(v, s) {
						t.Errorf("attempt %d got the client's %s: %q", i+1, name, v)
					}
				}
			}
		}
	}
	secrets := []string{valid, "rv-secret-", "rv-main-upstream-key", "rv-spare-upstream-key"}
	for name, values := range r.header {
		for _, v := range values {
			for _, s := range secrets {
				if strings.Contains(v, s) {
					t.Errorf("the client got %s: %q", name, v)
				}
			}
		}
	}
	logged, _ := os.ReadFile(defaultLog)
	if !strings.Contains(string(logged), "upstream roundtrip") {
		t.Fatalf("the DEBUG log has no round trip of reverse_proxy's:\n%s", logged)
	}
	for _, s := range secrets {
		if i := strings.Index(string(logged), s); i >= 0 {
			t.Errorf("the default log holds %s: …%s…", s, logged[max(i-200, 0):min(i+100, len(logged))])
		}
	}
}
