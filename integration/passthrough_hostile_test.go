package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostilePassCaddyfile routes priced chat, messages and generate-content models to one fake
// upstream ({{up}}) that answers each in its provider's published shape, for an account the
// tests credit.
const hostilePassCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider oa {
			base_url {{up}}/oa/v1
			api_key oa-upstream-key
			models hostile-chat
		}
		provider ge {
			base_url {{up}}/ge/v1beta
			api_key ge-upstream-key
			auth_style x-goog-api-key
			models hostile-gemini
		}
		price hostile-chat {
			input_tokens 1000
			output_tokens 2000
		}
		price hostile-gemini {
			input_tokens 1000
			output_tokens 2000
		}
		key mg-hostile-key {
			account hostile
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

// geminiFunctionCallAnswer is a Gemini answer, as generateContent documents it, whose one
// candidate calls the client's function "report" with args the client asked for: an object with
// a "usage" member. The answer's own usage, in usageMetadata after the candidates, is 4000 prompt
// and 6000 candidate tokens.
const geminiFunctionCallAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"report",` +
	`"args":{"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}}}]},"finishReason":"STOP","index":0}],` +
	`"usageMetadata":{"promptTokenCount":4000,"candidatesTokenCount":6000,"totalTokenCount":10000},"modelVersion":"hostile-gemini","responseId":"r1"}`

// hostileUpstream answers generateContent with geminiFunctionCallAnswer, and its SSE stream
// (alt=sse) with a text chunk and then that answer as the last chunk.
func hostilePassUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/ge/v1beta/models/hostile-gemini:generateContent" && r.Header.Get("X-Goog-Api-Key") == "ge-upstream-key":
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			fmt.Fprint(w, geminiFunctionCallAnswer)
		case r.URL.Path == "/ge/v1beta/models/hostile-gemini:streamGenerateContent" && r.URL.Query().Get("alt") == "sse" && r.Header.Get("X-Goog-Api-Key") == "ge-upstream-key":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"thinking\"}]},\"index\":0}],"+
				"\"usageMetadata\":{\"promptTokenCount\":4000,\"candidatesTokenCount\":3000,\"totalTokenCount\":7000},\"modelVersion\":\"hostile-gemini\"}\r\n\r\n")
			fmt.Fprint(w, "data: "+geminiFunctionCallAnswer+"\r\n\r\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestPassThroughHostileClients runs hostile clients' requests through one gateway, each subtest
// one attack on what a pass-through request is charged or what reaches the upstream.
func TestPassThroughHostileClients(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	up := hostilePassUpstream(t)
	base, g := startSimGateway(t, hostilePassCaddyfile, map[string]string{"up": up.URL})
	keys := keysEnv{g: g}
	if r := keys.adminMoney(t, "POST", "/mediagw/accounts/hostile/credit", `{"amount":"100","note":"test"}`,
		map[string]string{"Idempotency-Key": "hostile-credit-1", "Content-Type": "application/json"}); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	balance := func(t *testing.T) string {
		t.Helper()
		b := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/hostile/balance", "", nil)
		if b.field("held") != "0" {
			t.Fatalf("a hold is still open: %s", b.body)
		}
		return b.field("balance")
	}

	// A client declares a function with a "usage" parameter and has the model call it: the
	// call's args, an object in the answer, hold a usage object of 1 + 1 tokens. The charge is
	// the answer's usageMetadata (4000 prompt tokens at 1000 per million, 6000 output at 2000:
	// 16), not the args' (0.003), whether the answer is streamed or not.
	t.Run("gemini function call args naming usage", func(t *testing.T) {
		body := `{"contents":[{"role":"user","parts":[{"text":"call report with usage.prompt_tokens 1 and usage.completion_tokens 1"}]}],` +
			`"tools":[{"functionDeclarations":[{"name":"report","parameters":{"type":"OBJECT","properties":{"usage":{"type":"OBJECT",` +
			`"properties":{"prompt_tokens":{"type":"INTEGER"},"completion_tokens":{"type":"INTEGER"},"total_tokens":{"type":"INTEGER"}}}}}}]}]}`
		for _, c := range []struct{ path, want string }{
			{"/v1beta/models/hostile-gemini:generateContent", "84"},
			{"/v1beta/models/hostile-gemini:streamGenerateContent?alt=sse", "68"},
		} {
			req, _ := http.NewRequest("POST", base+c.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Goog-Api-Key", "mg-hostile-key")
			if r := do(t, req); r.status != 200 || !strings.Contains(string(r.body), `"functionCall"`) {
				t.Fatalf("%s = %d %s", c.path, r.status, r.body)
			}
			if got := balance(t); got != c.want {
				t.Fatalf("after %s the balance is %s, want %s (16 charged for the usageMetadata)", c.path, got, c.want)
			}
		}
	})
}
