package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// errorShapesCaddyfile serves three protocols from providers on a port nothing listens on
// ({{down}}), each with a price, for a key of an account credited with little, and a key limited
// to one request a minute. The messages and generate-content providers have base paths with a
// prefix of their own, which the gateway rewrites the request's path to before the proxy. The
// unreadable-* models' providers ({{unreadable}}) answer every request with an error in an
// encoding the gateway cannot read.
const errorShapesCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider oa {
			base_url http://127.0.0.1:{{down}}/v1
			api_key oa-upstream-key
			models shape-chat
		}
		provider an {
			base_url http://127.0.0.1:{{down}}/anthropic/v1
			api_key an-upstream-key
			auth_style x-api-key
			models shape-claude
		}
		provider ge {
			base_url http://127.0.0.1:{{down}}/gemini/v1beta
			api_key ge-upstream-key
			auth_style x-goog-api-key
			models shape-gemini
		}
		provider oa-unreadable {
			base_url {{unreadable}}/v1
			api_key oa-upstream-key
			models unreadable-chat
		}
		provider an-unreadable {
			base_url {{unreadable}}/anthropic/v1
			api_key an-upstream-key
			auth_style x-api-key
			models unreadable-claude
		}
		provider ge-unreadable {
			base_url {{unreadable}}/gemini/v1beta
			api_key ge-upstream-key
			auth_style x-goog-api-key
			models unreadable-gemini
		}
		price shape-chat {
			request 1
		}
		price shape-claude {
			request 1
		}
		price shape-gemini {
			request 1
		}
		key mg-shape-key {
			account shapes
		}
		key mg-shape-rate-key {
			account shapes-rate
			rate 1 1h
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
			lb_policy first
			lb_retries 1
		}
	}
}
`

// TestErrorShapesByProtocol checks that the gateway's own errors on a pass-through request come
// in the shape of the endpoint's protocol, with mediagw's code: OpenAI's for chat, Anthropic's
// for /v1/messages, Google's for generateContent. The cases: a request past the account's balance
// (402, as the billing contract asks: "in the endpoint's shape"), a missing key (401), and an
// upstream that cannot be reached, which was Caddy's empty 502 before.
func TestErrorShapesByProtocol(t *testing.T) {
	unreadable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "br")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "not brotli at all")
	}))
	t.Cleanup(unreadable.Close)
	base, g := startSimGateway(t, errorShapesCaddyfile, map[string]string{"down": fmt.Sprint(freePort(t)), "unreadable": unreadable.URL})
	keys := keysEnv{g: g}
	if r := keys.adminMoney(t, "POST", "/mediagw/accounts/shapes/credit", `{"amount":"0.5","note":"test"}`,
		map[string]string{"Idempotency-Key": "shapes-credit-1", "Content-Type": "application/json"}); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	type endpoint struct {
		name, path, body string
		key              func(*http.Request, string)
	}
	bearer := func(r *http.Request, k string) { r.Header.Set("Authorization", "Bearer "+k) }
	endpoints := []endpoint{
		{"chat", "/v1/chat/completions", `{"model":"shape-chat","messages":[{"role":"user","content":"hi"}]}`, bearer},
		{"messages", "/v1/messages", `{"model":"shape-claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			func(r *http.Request, k string) {
				r.Header.Set("X-Api-Key", k)
				r.Header.Set("Anthropic-Version", "2023-06-01")
			}},
		{"generateContent", "/v1beta/models/shape-gemini:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			func(r *http.Request, k string) { r.Header.Set("X-Goog-Api-Key", k) }},
	}
	send := func(t *testing.T, e endpoint, key string) response {
		t.Helper()
		req, _ := http.NewRequest("POST", base+e.path, strings.NewReader(e.body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			e.key(req, key)
		}
		return do(t, req)
	}
	// check asserts that r is status with code in e's protocol's error shape.
	check := func(t *testing.T, e endpoint, r response, status int, code, kind string) {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: status %d, want %d: %s", e.name, r.status, status, r.body)
		}
		switch e.name {
		case "chat":
			var b struct {
				Error struct{ Type, Code, Message string }
			}
			if json.Unmarshal(r.body, &b) != nil || b.Error.Code != code || b.Error.Type != kind || b.Error.Message == "" {
				t.Fatalf("chat: not the OpenAI shape with code %s, type %s: %s", code, kind, r.body)
			}
		case "messages":
			var b struct {
				Type  string
				Error struct{ Type, Code, Message string }
			}
			if json.Unmarshal(r.body, &b) != nil || b.Type != "error" || b.Error.Type != kind || b.Error.Code != code || b.Error.Message == "" {
				t.Fatalf("messages: not Anthropic's shape with type %s, code %s: %s", kind, code, r.body)
			}
		default:
			var b struct {
				Error struct {
					Code    int
					Message string
					Status  string
					Details []struct {
						Type   string `json:"@type"`
						Reason string
					}
				}
			}
			if json.Unmarshal(r.body, &b) != nil || b.Error.Code != status || b.Error.Status != kind || b.Error.Message == "" ||
				len(b.Error.Details) != 1 || b.Error.Details[0].Reason != code || !strings.HasSuffix(b.Error.Details[0].Type, "google.rpc.ErrorInfo") {
				t.Fatalf("generateContent: not Google's shape with status %s, reason %s: %s", kind, code, r.body)
			}
		}
	}
	kinds := map[string]map[int]string{
		"chat":            {401: "authentication_error", 402: "insufficient_quota", 429: "rate_limit_error", 502: "server_error"},
		"messages":        {401: "authentication_error", 402: "billing_error", 429: "rate_limit_error", 502: "api_error"},
		"generateContent": {401: "UNAUTHENTICATED", 402: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 502: "UNAVAILABLE"},
	}
	// Past the balance first (0.5 credited, a request's price is 1), while every upstream is
	// still untried: a provider whose upstreams all failed answers 503 before any hold.
	for _, e := range endpoints {
		t.Run(e.name+" past the balance", func(t *testing.T) {
			check(t, e, send(t, e, "mg-shape-key"), 402, "insufficient_quota", kinds[e.name][402])
		})
	}
	if r := keys.adminMoney(t, "POST", "/mediagw/accounts/shapes/credit", `{"amount":"1","note":"test"}`,
		map[string]string{"Idempotency-Key": "shapes-credit-2", "Content-Type": "application/json"}); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	for _, e := range endpoints {
		t.Run(e.name, func(t *testing.T) {
			check(t, e, send(t, e, ""), 401, "missing_api_key", kinds[e.name][401])
			// The request holds 1 of the 1.5 and, its upstream unreachable, releases it: the 502
			// is the contract's invalid_response in the protocol's shape, not an empty answer.
			r := send(t, e, "mg-shape-key")
			check(t, e, r, 502, "invalid_response", kinds[e.name][502])
			if r.header.Get("Content-Type") != "application/json" {
				t.Fatalf("%s: the 502's Content-Type is %q", e.name, r.header.Get("Content-Type"))
			}
		})
	}
	// The key's rate (one an hour): past its first request, each protocol gets 429 in its shape.
	for _, e := range endpoints {
		t.Run(e.name+" past the key's rate", func(t *testing.T) {
			send(t, e, "mg-shape-rate-key")
			r := send(t, e, "mg-shape-rate-key")
			check(t, e, r, 429, "rate_limit_exceeded", kinds[e.name][429])
			if r.header.Get("Retry-After") == "" {
				t.Fatalf("%s: the 429 has no Retry-After", e.name)
			}
		})
	}
	// An upstream's error answer that the credential redaction cannot read (Content-Encoding br)
	// is replaced by the transport: a 502 invalid_response in the shape of the endpoint called,
	// though the request the transport sees has the provider's path.
	for _, e := range endpoints {
		e.path, e.body = strings.Replace(e.path, "shape-", "unreadable-", 1), strings.Replace(e.body, "shape-", "unreadable-", 1)
		t.Run(e.name+" with an unreadable upstream error", func(t *testing.T) {
			check(t, e, send(t, e, "mg-shape-key"), 502, "invalid_response", kinds[e.name][502])
		})
	}
}
