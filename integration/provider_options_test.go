package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestGeminiFieldMaskCannotHideThoughts: a client of a Gemini thinking model asks Google, through
// the gateway, to leave thoughtsTokenCount (and totalTokenCount) out of the answer with a field
// mask (X-Goog-FieldMask, ?fields= or ?$fields=, Google's system parameters). Google still bills
// the operator the 200 thought tokens; the gateway, reading only the usage the answer shows,
// charges 10 input and 5 output tokens. The call must either be refused before it reaches the
// provider (400 in Google's shape, naming the field mask, as the gateway does), or be charged the
// 205 output tokens the provider made (10 × 0.001 + 205 × 0.002 = 0.42).
func TestGeminiFieldMaskCannotHideThoughts(t *testing.T) {
	fake := newProviderOptionsFake(t)
	base, g := startSimGateway(t, providerOptionsCaddyfile, map[string]string{"fake_url": fake.URL})
	const mask = "candidates,usageMetadata.promptTokenCount,usageMetadata.candidatesTokenCount"
	body := `{"contents":[{"role":"user","parts":[{"text":"think, then answer in three words"}]}]}`
	cases := []struct {
		name, account, path string
		header              string
	}{
		{"no mask (the control: the fake bills thoughts as output)", "atk-e", "/v1beta/models/atk-gemini:generateContent", ""},
		{"X-Goog-FieldMask header", "atk-a", "/v1beta/models/atk-gemini:generateContent", mask},
		{"fields query parameter", "atk-b", "/v1beta/models/atk-gemini:generateContent?fields=" + url.QueryEscape(mask), ""},
		{"$fields query parameter", "atk-c", "/v1beta/models/atk-gemini:generateContent?%24fields=" + url.QueryEscape(mask), ""},
		{"X-Goog-FieldMask on a stream", "atk-d", "/v1beta/models/atk-gemini:streamGenerateContent?alt=sse", mask},
	}
	for _, c := range cases {
		keysEnv{g: g}.credit(t, c.account, "10", "atk2-"+c.account)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(fake.received())
			req, _ := http.NewRequest("POST", base+c.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Goog-Api-Key", "mg-"+c.account)
			if c.header != "" {
				req.Header.Set("X-Goog-FieldMask", c.header)
			}
			r := do(t, req)
			if r.status >= 400 && r.status < 500 {
				if len(fake.received()) != before {
					t.Fatalf("refused with %d but forwarded anyway", r.status)
				}
				// Refused before the provider, nothing hidden from the bill: in Google's shape,
				// saying why.
				e, _ := r.json(t)["error"].(map[string]any)
				if r.status != 400 || e["status"] != "INVALID_ARGUMENT" || !strings.Contains(fmt.Sprint(e["message"]), "field mask") {
					t.Errorf("refused with %d %s; want 400 INVALID_ARGUMENT naming the field mask", r.status, r.body)
				}
				return
			}
			if r.status != 200 {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			got := fake.received()[len(fake.received())-1]
			t.Logf("the provider got query %q, X-Goog-FieldMask %q; the client saw %s", got.query, got.header.Get("X-Goog-FieldMask"), r.body)
			admin := "http://" + g.admin + "/mediagw/accounts/" + c.account
			var ledger string
			waitFor(t, c.account+"'s hold to end", func() bool {
				ledger = ledgerEnds(t, call(t, "GET", admin+"/ledger", "", nil), false)
				return call(t, "GET", admin+"/balance", "", nil).field("held") == "0" && strings.Contains(ledger, "settle")
			})
			if ledger != "settle charged 0.42" {
				t.Errorf("ledger %q, want \"settle charged 0.42\": the provider bills 200 thought tokens that the field mask hid from the gateway", ledger)
			}
		})
	}
}

// TestDearerServiceTiersAreRefused: a request may ask the provider for a dearer way of serving it
// that the gateway neither reads nor prices: OpenAI's service_tier "priority" (Priority
// processing, billed at a premium per token), Anthropic's inference_geo "us" (US-only
// inference, 1.1 times the token price), Anthropic's speed "fast" (fast mode, "premium pricing",
// a multiplier on the standard rates: platform.claude.com/docs/en/build-with-claude/fast-mode) and the Gemini API's service_tier "priority" ("75% to
// 100% more than standard", ai.google.dev/gemini-api/docs/optimization). The account is charged the standard token price while
// the operator pays the premium. Such a request must be refused (or priced) rather than
// forwarded and charged as a standard one.
func TestDearerServiceTiersAreRefused(t *testing.T) {
	fake := newProviderOptionsFake(t)
	base, g := startSimGateway(t, providerOptionsCaddyfile, map[string]string{"fake_url": fake.URL})
	keysEnv{g: g}.credit(t, "atk-e", "10", "atk2-atk-e")
	cases := []struct{ name, path, body, asked string }{
		{"OpenAI service_tier priority", "/v1/chat/completions",
			`{"model":"atk-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"service_tier":"priority"}`, `"service_tier":"priority"`},
		{"Anthropic inference_geo us", "/v1/messages",
			`{"model":"atk-claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"inference_geo":"us"}`, `"inference_geo":"us"`},
		{"Anthropic speed fast", "/v1/messages",
			`{"model":"atk-claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"speed":"fast"}`, `"speed":"fast"`},
		{"Gemini service_tier priority", "/v1beta/models/atk-gemini:generateContent",
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5},"service_tier":"priority"}`, `"service_tier":"priority"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(fake.received())
			r := call(t, "POST", base+c.path, "mg-atk-e", c.body)
			forwarded := len(fake.received()) > before && strings.Contains(fake.received()[len(fake.received())-1].body, c.asked)
			if r.status == 200 && forwarded {
				t.Errorf("%s reached the provider and was answered %s; the gateway charges it at the standard token price", c.asked, r.body)
			}
			if r.status != 400 || forwarded || !strings.Contains(string(r.body), c.asked[1:strings.Index(c.asked[1:], `"`)+1]) {
				t.Errorf("%s: %d %s (forwarded %v); want 400 naming the field, nothing forwarded", c.asked, r.status, r.body, forwarded)
			}
		})
	}
	// The standard and cheaper values pass, and are charged as usual.
	for path, body := range map[string]string{
		"/v1/chat/completions": `{"model":"atk-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"service_tier":"flex"}`,
		"/v1/messages":         `{"model":"atk-claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"inference_geo":"global","speed":"standard","service_tier":"standard_only"}`,
	} {
		if r := call(t, "POST", base+path, "mg-atk-e", body); r.status != 200 {
			t.Errorf("%s %s: %d %s, want 200", path, body, r.status, r.body)
		}
	}
	admin := "http://" + g.admin + "/mediagw/accounts/atk-e"
	waitFor(t, "holds to end", func() bool { return call(t, "GET", admin+"/balance", "", nil).field("held") == "0" })
	t.Logf("ledger: %s", ledgerEnds(t, call(t, "GET", admin+"/ledger", "", nil), false))
}

// TestGoogleContentTypeOverrideIsRefused: the gateway refuses a JSON body whose Content-Type names
// another charset than UTF-8 ("a provider that honoured that charset would read other fields",
// docs/security.md), but Google's APIs take the Content-Type from the $ct system parameter too
// ("$ct: HTTP Content-Type request header override", docs.cloud.google.com/apis/docs/
// system-parameters), and the gateway forwards ?$ct= as it is. The same body and charset given
// through $ct must be refused as the header is.
func TestGoogleContentTypeOverrideIsRefused(t *testing.T) {
	fake := newProviderOptionsFake(t)
	base, g := startSimGateway(t, providerOptionsCaddyfile, map[string]string{"fake_url": fake.URL})
	keysEnv{g: g}.credit(t, "atk-a", "100", "atk2-atk-a")
	body := `{"contents":[{"role":"user","parts":[{"text":"hi +ACI-"}]}]}`
	send := func(query, contentType string) (response, bool) {
		before := len(fake.received())
		req, _ := http.NewRequest("POST", base+"/v1beta/models/atk-gemini:generateContent"+query, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("X-Goog-Api-Key", "mg-atk-a")
		r := do(t, req)
		return r, len(fake.received()) > before
	}
	if r, forwarded := send("", "application/json; charset=utf-7"); r.status != 400 || forwarded {
		t.Fatalf("the control (charset=utf-7 in Content-Type) = %d forwarded=%v, want 400 and nothing forwarded", r.status, forwarded)
	}
	for _, q := range []string{"?%24ct=" + url.QueryEscape("application/json; charset=utf-7"), "?$ct=" + url.QueryEscape("application/json; charset=utf-16")} {
		r, forwarded := send(q, "application/json")
		if forwarded {
			t.Errorf("%s was forwarded (answer %d): the provider reads the body in a charset the gateway did not check", q, r.status)
		}
		if r.status != 400 || !strings.Contains(string(r.body), "$ct") {
			t.Errorf("%s: %d %s, want 400 naming $ct", q, r.status, r.body)
		}
	}
}
