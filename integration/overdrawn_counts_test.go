package integration

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
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
