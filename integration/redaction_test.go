package integration

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// redactionCaddyfile is the README's pass-through form: one reverse_proxy with the mediagw
// upstream source and transport.
const redactionCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  sk-proj-operator0000abcd
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

// TestUpstreamErrorsDoNotShowTheOperatorsKey has the provider refuse the operator's key with a
// message that quotes a masked form of it, as OpenAI does, plain and gzip-compressed: the client
// gets the provider's status and message with the key redacted. A successful answer passes
// unchanged.
func TestUpstreamErrorsDoNotShowTheOperatorsKey(t *testing.T) {
	const refusal = `{"error":{"message":"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	const success = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"message":{"content":"a masked key looks like sk-proj-****abcd"}}]}`
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status := refusal, http.StatusUnauthorized
		if r.URL.Query().Get("ok") != "" {
			body, status = success, http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
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
	base, _ := startSimGateway(t, redactionCaddyfile, map[string]string{"upstream_url": provider.URL})

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
		return resp.StatusCode, string(b)
	}
	for _, enc := range []string{"", "gzip"} {
		status, body := send("", enc)
		if status != 401 || strings.Contains(body, "abcd") || !strings.Contains(body, "Incorrect API key provided: [redacted].") ||
			!strings.Contains(body, `"code":"invalid_api_key"`) {
			t.Fatalf("refusal (Accept-Encoding %q) = %d %s", enc, status, body)
		}
	}
	if status, body := send("?ok=1", ""); status != 200 || body != success {
		t.Fatalf("success = %d %s, want it unchanged", status, body)
	}
}
