package integration

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/upstream"
)

// redactionCaddyfile is the pass-through form of docs/providers.md: one reverse_proxy with the mediagw
// upstream source and transport.
const redactionCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  {{operator_key}}
			models   gpt-4o-mini
		}
		key mg-redaction {
			account acme
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
		}
	}
}
`

// operatorKey has none of the usual key prefixes (as an Ark key has none): only the gateway's
// knowledge of the key it sent can find it in an answer.
const operatorKey = "3f2a9c1e-7b4d-4e2a-9c1e-operator0000"

// TestUpstreamErrorsDoNotShowTheOperatorsKey has the provider refuse the operator's key with a
// message that quotes a masked form of it, as OpenAI does, plain and gzip-compressed: the client
// gets the provider's status and message with the key redacted. A provider that echoes the whole
// key, in JSON (plain or with escapes), in plain text or in HTML, has it redacted too, and in
// any answer's headers. A successful answer's body passes unchanged.
func TestUpstreamErrorsDoNotShowTheOperatorsKey(t *testing.T) {
	const refusal = `{"error":{"message":"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	const success = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"message":{"content":"a masked key looks like sk-proj-****abcd"}}]}`
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status, contentType := refusal, http.StatusUnauthorized, "application/json"
		if got := r.Header.Get("Authorization"); got != "Bearer "+operatorKey {
			body = `{"error":{"message":"the gateway sent the wrong key"}}`
		}
		switch r.URL.Query().Get("echo") {
		case "json":
			body = `{"error":{"message":"key ` + operatorKey + ` is not allowed","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
		case "escaped":
			body = `{"error":{"message":"key ` + strings.ReplaceAll(operatorKey, "-", `\u002d`) + ` is not allowed","code":"invalid_api_key"}}`
		case "text":
			body, contentType = "invalid key: "+operatorKey+"\n", "text/plain; charset=utf-8"
		case "html":
			body, contentType = "<html><body>key <b>"+operatorKey+"</b> refused</body></html>", "text/html"
		}
		if r.URL.Query().Get("ok") != "" {
			body, status = success, http.StatusOK
		}
		// A provider (or a proxy in front of it) that echoes the request's credential in a
		// header, on errors and successes alike.
		w.Header().Set("X-Echo-Authorization", r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", contentType)
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(status)
			zw := gzip.NewWriter(w)
			io.WriteString(zw, body)
			zw.Close()
			return
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, redactionCaddyfile, map[string]string{"upstream_url": provider.URL, "operator_key": operatorKey})

	send := func(query, acceptEncoding string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", base+"/v1/chat/completions"+query, strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer mg-redaction")
		req.Header.Set("Content-Type", "application/json")
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding) // the client then decodes itself
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rd io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			if rd, err = gzip.NewReader(resp.Body); err != nil {
				t.Fatal(err)
			}
		}
		b, err := io.ReadAll(rd)
		if err != nil {
			t.Fatal(err)
		}
		for name, values := range resp.Header {
			if strings.Contains(strings.Join(values, " "), "operator0000") {
				t.Errorf("%s%s: the answer's header %s shows the operator's key: %q", base, query, name, values)
			}
		}
		return resp.StatusCode, string(b)
	}
	for _, enc := range []string{"", "gzip"} {
		status, body := send("", enc)
		if status != 401 || strings.Contains(body, "abcd") || !strings.Contains(body, "Incorrect API key provided: [redacted].") ||
			!strings.Contains(body, `"code":"invalid_api_key"`) {
			t.Fatalf("refusal (Accept-Encoding %q) = %d %s", enc, status, body)
		}
	}
	for _, echo := range []string{"json", "escaped", "text", "html"} {
		for _, enc := range []string{"", "gzip"} {
			status, body := send("?echo="+echo, enc)
			if status != 401 || strings.Contains(body, "operator0000") || !strings.Contains(body, upstream.Redacted) {
				t.Errorf("the provider echoing the key (%s, Accept-Encoding %q) = %d %s", echo, enc, status, body)
			}
		}
	}
	if status, body := send("?ok=1", ""); status != 200 || body != success {
		t.Fatalf("success = %d %s, want it unchanged", status, body)
	}
}
