package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestOverdrawnAccountIsRefusedCounts: an account whose balance went below zero gets 402 on
// its next requests until it is topped up (issue #24), also on those that hold nothing: the
// counts of input tokens through the official SDKs (@google/genai's models.countTokens,
// @anthropic-ai/sdk's messages.countTokens, openai's responses.inputTokens.count), each in its
// endpoint's shape, and a chat for a model without a price. A top-up back to zero lets them
// through again.
func TestOverdrawnAccountIsRefusedCounts(t *testing.T) {
	up := startCountingUpstream(t)
	caddyfile := strings.Replace(countTokensCaddyfile, "models p-chat p-embed", "models p-chat p-embed p-free", 1)
	base, g := startSimGateway(t, caddyfile, map[string]string{"up": up.URL, "usage_log": filepath.Join(t.TempDir(), "usage.log")})
	keys := keysEnv{g: g}
	adjust := func(body, idem string) {
		t.Helper()
		if r := keys.adminMoney(t, "POST", "/mediagw/accounts/count/credit", body,
			map[string]string{"Idempotency-Key": idem, "Content-Type": "application/json"}); r.status != 200 {
			t.Fatalf("credit %s = %d %s", body, r.status, r.body)
		}
	}
	adjust(`{"amount":"-0.5","adjust":true,"note":"charged over its holds"}`, "overdrawn-1")
	counts := `
const { GoogleGenAI } = sdk("@google/genai");
const Anthropic = sdk("@anthropic-ai/sdk").default;
const OpenAI = sdk("openai").default;
const report = (name, e) => {
  if (!e) { console.log(name, "ok"); return; }
  let body = e.error;
  if (name === "gemini") { try { body = JSON.parse(e.message); } catch (_) { body = e.message; } }
  console.log(name, e.status, JSON.stringify(body));
};
const ai = new GoogleGenAI({ apiKey: "mg-count", httpOptions: { baseUrl: process.env.GATEWAY } });
try { await ai.models.countTokens({ model: "p-gemini", contents: "hi" }); report("gemini"); } catch (e) { report("gemini", e); }
const an = new Anthropic({ apiKey: "mg-count", baseURL: process.env.GATEWAY, maxRetries: 0 });
try { await an.messages.countTokens({ model: "p-claude", messages: [{ role: "user", content: "hi" }] }); report("anthropic"); } catch (e) { report("anthropic", e); }
const oa = new OpenAI({ apiKey: "mg-count", baseURL: process.env.GATEWAY + "/v1", maxRetries: 0 });
try { await oa.responses.inputTokens.count({ model: "p-chat", input: "hi" }); report("openai"); } catch (e) { report("openai", e); }
`
	out := runCountScript(t, base, counts)
	refusals := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, rest, _ := strings.Cut(line, " ")
		refusals[name] = rest
	}
	// Each refusal is a 402 in its protocol's shape, with the contract's code.
	var gemini struct {
		Error struct {
			Code    int
			Status  string
			Details []struct{ Reason string }
		}
	}
	if status, body, _ := strings.Cut(refusals["gemini"], " "); status != "402" || json.Unmarshal([]byte(body), &gemini) != nil ||
		gemini.Error.Code != 402 || gemini.Error.Status != "FAILED_PRECONDITION" || len(gemini.Error.Details) != 1 || gemini.Error.Details[0].Reason != "insufficient_quota" {
		t.Errorf("gemini's countTokens of an overdrawn account: %s\n%s", refusals["gemini"], out)
	}
	var anthropic struct {
		Type  string
		Error struct{ Type, Code string }
	}
	if status, body, _ := strings.Cut(refusals["anthropic"], " "); status != "402" || json.Unmarshal([]byte(body), &anthropic) != nil ||
		anthropic.Type != "error" || anthropic.Error.Type != "billing_error" || anthropic.Error.Code != "insufficient_quota" {
		t.Errorf("anthropic's count_tokens of an overdrawn account: %s\n%s", refusals["anthropic"], out)
	}
	var openai struct{ Type, Code string }
	if status, body, _ := strings.Cut(refusals["openai"], " "); status != "402" || json.Unmarshal([]byte(body), &openai) != nil ||
		openai.Type != "insufficient_quota" || openai.Code != "insufficient_quota" {
		t.Errorf("openai's input_tokens of an overdrawn account: %s\n%s", refusals["openai"], out)
	}
	// A model without a price holds nothing either.
	free := call(t, "POST", base+"/v1/chat/completions", "mg-count", map[string]any{"model": "p-free", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if free.status != http.StatusPaymentRequired || !strings.Contains(string(free.body), `"code":"insufficient_quota"`) {
		t.Errorf("a chat of a model without a price, on an overdrawn account = %d %s; want 402 insufficient_quota", free.status, free.body)
	}
	// Topped up to exactly zero: counts are free again.
	adjust(`{"amount":"0.5","note":"top-up"}`, "overdrawn-2")
	out = runCountScript(t, base, counts)
	for _, want := range []string{"gemini ok", "anthropic ok", "openai ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("after the top-up: no %q in\n%s", want, out)
		}
	}
}

// budgetCaddyfile prices a chat model by its tokens (1 per million input tokens, 1000 per
// million output tokens) and gives its key a daily budget of 0.01.
const budgetCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider oa {
			base_url {{up}}/v1
			api_key oa-upstream-key
			models b-chat
		}
		price b-chat {
			input_tokens 1
			output_tokens 1000
		}
		key mg-budget {
			account budgeted
			budget 0.01 day
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route {
			endpoint POST /v1/responses/input_tokens
		}
		reverse_proxy {
			dynamic mediagw
			transport mediagw
		}
	}
}
`

// TestKeyPastItsBudgetIsRefusedCounts: a chat (openai-go) of max_tokens 1 whose answer reports
// 20 output tokens is charged them, 0.02, past the key's day budget of 0.01; the key's next
// count of input tokens (openai-go's responses.inputTokens.count), which holds nothing, is
// refused with 402 in OpenAI's shape (the next day lets it through: see accounting's
// TestNothingHeldWhileOverdrawn).
func TestKeyPastItsBudgetIsRefusedCounts(t *testing.T) {
	up := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			writeFakeJSON(w, 200, map[string]any{"id": "chatcmpl-over", "object": "chat.completion", "created": 1, "model": "b-chat",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "length", "message": map[string]any{"role": "assistant", "content": "more than asked"}}},
				"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 20, "total_tokens": 23}})
		case "/v1/responses/input_tokens":
			writeFakeJSON(w, 200, map[string]any{"object": "response.input_tokens", "input_tokens": 3})
		default:
			writeFakeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no such route", "type": "invalid_request_error"}})
		}
	}))
	base, g := startSimGateway(t, budgetCaddyfile, map[string]string{"up": up.URL})
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-budget"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	count := func() error {
		_, err := oa.Responses.InputTokens.Count(ctx, responses.InputTokenCountParams{Model: openai.String("b-chat"),
			Input: responses.InputTokenCountParamsInputUnion{OfString: openai.String("hi")}})
		return err
	}
	if err := count(); err != nil {
		t.Fatalf("a count within the budget: %v", err)
	}
	if _, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "b-chat", MaxTokens: openai.Int(1),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil {
		t.Fatal(err)
	}
	if _, end := toolEnded(t, g, "budgeted", 0); !strings.HasPrefix(end, "settle 0.02") {
		t.Fatalf("the chat ended %q; want charged its 20 output tokens", end)
	}
	var apiErr *openai.Error
	if err := count(); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusPaymentRequired || apiErr.Code != "insufficient_quota" ||
		!strings.Contains(apiErr.Message, "budget") {
		t.Errorf("a count past the key's budget = %v; want 402 insufficient_quota about the budget", err)
	}
}
