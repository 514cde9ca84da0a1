package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/money"
)

// countTokensCaddyfile prices a model of each protocol by tokens (1000 per million input
// tokens, 2000 per million output tokens: a generation without usage is held, and charged,
// max_output's 4096 output tokens, 8.192), forwards the count endpoints that docs/providers.md
// shows an operator adding, and logs usage records.
const countTokensCaddyfile = `{
	{{globals}}
	log usage {
		output mediagw_buffered {
			flush_interval 50ms
			output file {{usage_log}} {
				roll_disabled
			}
		}
		format json
		include mediagw.usage
	}
	mediagw {
		storage badger {{data}}
		provider oa {
			base_url {{up}}/oa/v1
			api_key oa-upstream-key
			models p-chat p-embed
		}
		provider an {
			base_url {{up}}/an/v1
			api_key an-upstream-key
			auth_style x-api-key
			models p-claude
		}
		provider ge {
			base_url {{up}}/ge/v1beta
			api_key ge-upstream-key
			auth_style x-goog-api-key
			models p-gemini
		}
		price p-chat {
			input_tokens 1000
			output_tokens 2000
		}
		price p-embed {
			input_tokens 1000
			output_tokens 2000
		}
		price p-claude {
			input_tokens 1000
			output_tokens 2000
		}
		price p-gemini {
			input_tokens 1000
			output_tokens 2000
		}
		key mg-count {
			account count
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route {
			endpoint POST /v1/messages/count_tokens
			endpoint POST /v1/responses/input_tokens
		}
		reverse_proxy {
			dynamic mediagw
			transport mediagw
		}
	}
}
`

// countingUpstream is a fake of the providers' count, embedding and generation endpoints, in
// the shapes of their API references: Gemini's countTokens answers {"totalTokens"}, its
// embedContent {"embedding"} and batchEmbedContents {"embeddings"}, none with usageMetadata;
// Anthropic's count_tokens and OpenAI's responses/input_tokens answer {"input_tokens"}; OpenAI's
// embeddings report usage.prompt_tokens; a rerank answers in Cohere's shape (search units, no
// tokens). generateContent answers without usageMetadata. It
// keeps the length of the last body each path got.
type countingUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string]int
}

func startCountingUpstream(t *testing.T) *countingUpstream {
	up := &countingUpstream{bodies: map[string]int{}}
	up.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		up.mu.Lock()
		up.bodies[r.URL.Path] = len(body)
		up.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		gemini := r.Header.Get("X-Goog-Api-Key") == "ge-upstream-key"
		switch {
		case gemini && strings.HasSuffix(r.URL.Path, ":countTokens"):
			io.WriteString(w, `{"totalTokens": 3, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 3}]}`)
		case gemini && strings.HasSuffix(r.URL.Path, ":embedContent"):
			io.WriteString(w, `{"embedding": {"values": [0.1, 0.2, 0.3]}}`)
		case gemini && strings.HasSuffix(r.URL.Path, ":batchEmbedContents"):
			io.WriteString(w, `{"embeddings": [{"values": [0.1, 0.2, 0.3]}, {"values": [0.4, 0.5, 0.6]}]}`)
		case gemini && strings.HasSuffix(r.URL.Path, ":generateContent"):
			io.WriteString(w, `{"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}`)
		case r.URL.Path == "/an/v1/messages/count_tokens" && r.Header.Get("X-Api-Key") == "an-upstream-key":
			io.WriteString(w, `{"input_tokens": 3}`)
		case r.URL.Path == "/oa/v1/responses/input_tokens" && r.Header.Get("Authorization") == "Bearer oa-upstream-key":
			io.WriteString(w, `{"object": "response.input_tokens", "input_tokens": 3}`)
		case r.URL.Path == "/oa/v1/rerank" && r.Header.Get("Authorization") == "Bearer oa-upstream-key":
			io.WriteString(w, `{"id": "r1", "results": [{"index": 0, "relevance_score": 0.9}], "meta": {"billed_units": {"search_units": 1}}}`)
		case r.URL.Path == "/oa/v1/embeddings" && r.Header.Get("Authorization") == "Bearer oa-upstream-key":
			io.WriteString(w, `{"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}], "model": "p-embed", "usage": {"prompt_tokens": 3, "total_tokens": 3}}`)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}`)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// inputEstimate is the input a body of the length the upstream got for path is charged when
// its answer reports none: one token per 4 bytes, at 1000 per million.
func (up *countingUpstream) inputEstimate(t *testing.T, path string) int64 {
	t.Helper()
	up.mu.Lock()
	n, ok := up.bodies[path]
	up.mu.Unlock()
	if !ok {
		t.Fatalf("the upstream got no %s", path)
	}
	return billing.TokensOf(int64(n)) * 1000
}

// runCountScript runs the body of an async Node function, whose sdk(name) loads one of the
// official SDKs, against the gateway at base (GATEWAY), and returns its output.
func runCountScript(t *testing.T, base, source string) string {
	t.Helper()
	dir, err := installNodeSDKs()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "count.cjs")
	source = `const sdk = require("node:module").createRequire(process.env.SDK_DIR + "/package.json");
(async () => {` + source + `})().catch((e) => { console.error(e); process.exit(1); });
`
	if err := os.WriteFile(script, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SDK_DIR="+dir, "GATEWAY="+base, "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	return string(out)
}

// TestCountTokensIsNotCharged: counting a request's tokens generates nothing and no provider
// bills it. Gemini's models.countTokens (through @google/genai), Anthropic's messages.countTokens
// (through @anthropic-ai/sdk) and OpenAI's responses.inputTokens.count (through openai), the
// latter two forwarded as endpoints the operator added, hold and charge nothing: the ledger has
// no entry, and each call has a usage record of its model, charging nothing. A key that may not
// use the model is still refused.
func TestCountTokensIsNotCharged(t *testing.T) {
	up := startCountingUpstream(t)
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": usageLog})
	out := runCountScript(t, base, `
const { GoogleGenAI } = sdk("@google/genai");
const Anthropic = sdk("@anthropic-ai/sdk").default;
const OpenAI = sdk("openai").default;
const ai = new GoogleGenAI({ apiKey: "mg-count", httpOptions: { baseUrl: process.env.GATEWAY } });
const g = await ai.models.countTokens({ model: "p-gemini", contents: "hi" });
console.log("gemini", g.totalTokens);
const an = new Anthropic({ apiKey: "mg-count", baseURL: process.env.GATEWAY, maxRetries: 0 });
const a = await an.messages.countTokens({ model: "p-claude", messages: [{ role: "user", content: "hi" }] });
console.log("anthropic", JSON.stringify(a));
const oa = new OpenAI({ apiKey: "mg-count", baseURL: process.env.GATEWAY + "/v1", maxRetries: 0 });
const o = await oa.responses.inputTokens.count({ model: "p-chat", input: "hi" });
console.log("openai", JSON.stringify(o));
`)
	for _, want := range []string{"gemini 3\n", `anthropic {"input_tokens":3}`, `openai {"object":"response.input_tokens","input_tokens":3}`} {
		if !strings.Contains(out, want) {
			t.Errorf("the SDKs' counts: no %s in\n%s", want, out)
		}
	}
	defer func() {
		if t.Failed() {
			for _, rec := range readUsageLog(t, usageLog, "count") {
				t.Logf("usage record %+v", rec)
			}
		}
	}()
	// One request record for each model's count, labelled by its endpoint (the metrics' label of
	// the path, which an added count endpoint has too), charging nothing.
	// (@google/genai picks the API version: the label's prefix is its.)
	for model, endpoint := range map[string]string{"p-gemini": "/models/{model}:countTokens",
		"p-claude": "/v1/messages/count_tokens", "p-chat": "/v1/responses/input_tokens"} {
		waitFor(t, "the usage record of the count of "+model, func() bool {
			for _, rec := range readUsageLog(t, usageLog, "count") {
				if rec.Event == "request" && rec.Model == model && rec.Status == "200" {
					if rec.Amount != "" {
						t.Errorf("the count of %s was charged %s", model, rec.Amount)
					}
					if !strings.HasSuffix(rec.Endpoint, endpoint) || !strings.HasPrefix(rec.Endpoint, "/v1") {
						t.Errorf("the count of %s is labelled %q; want %q", model, rec.Endpoint, endpoint)
					}
					return true
				}
			}
			return false
		})
	}
	// The records are written after the settlements: a count that was held is in the ledger now.
	for _, e := range ledgerEntries(t, g, "count") {
		t.Errorf("a count left a ledger entry: %v", e)
	}
	// Still model-gated: a key restricted to other models is refused the count.
	_, narrow := keysEnv{g: g}.newKey(t, `{"account":"count","models":["p-chat"]}`)
	req, _ := http.NewRequest("POST", base+"/v1beta/models/p-gemini:countTokens", strings.NewReader(`{"contents":[{"parts":[{"text":"hi"}]}]}`))
	req.Header.Set("X-Goog-Api-Key", narrow)
	req.Header.Set("Content-Type", "application/json")
	if got := do(t, req); got.status != http.StatusForbidden {
		t.Errorf("a count of a model the key may not use = %d %s, want 403", got.status, got.body)
	}
}

// TestEmbeddingsAreChargedTheirInput: an embedding makes no output tokens. Gemini's
// embedContent and batchEmbedContents (the one @google/genai's models.embedContent calls), whose
// answers report no usage, are charged their input estimate (one token per 4 bytes of body) and
// no output; OpenAI's embeddings (through openai) are charged the prompt_tokens they report; a
// rerank, whose answer counts no tokens, its input estimate.
func TestEmbeddingsAreChargedTheirInput(t *testing.T) {
	up := startCountingUpstream(t)
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": usageLog})

	// embedContent, which the SDK does not call on the Gemini API: a plain request.
	req, _ := http.NewRequest("POST", base+"/v1beta/models/p-gemini:embedContent", strings.NewReader(`{"content":{"parts":[{"text":"hello world"}]}}`))
	req.Header.Set("X-Goog-Api-Key", "mg-count")
	req.Header.Set("Content-Type", "application/json")
	if r := do(t, req); r.status != 200 {
		t.Fatalf("embedContent = %d %s", r.status, r.body)
	}
	if got, want := settledSince(t, g, "count", 0), up.inputEstimate(t, "/ge/v1beta/models/p-gemini:embedContent"); got != want {
		t.Errorf("embedContent without usage charged %s, want its input estimate %s", money.Format(got), money.Format(want))
	}

	from := len(ledgerEntries(t, g, "count"))
	out := runCountScript(t, base, `
const { GoogleGenAI } = sdk("@google/genai");
const ai = new GoogleGenAI({ apiKey: "mg-count", httpOptions: { baseUrl: process.env.GATEWAY } });
const r = await ai.models.embedContent({ model: "p-gemini", contents: ["hello", "world"] });
console.log("embeddings", r.embeddings.length);
`)
	if !strings.Contains(out, "embeddings 2") {
		t.Fatalf("the SDK's embedContent: %s", out)
	}
	if got, want := settledSince(t, g, "count", from), up.inputEstimate(t, "/ge/v1beta/models/p-gemini:batchEmbedContents"); got != want {
		t.Errorf("batchEmbedContents without usage charged %s, want its input estimate %s", money.Format(got), money.Format(want))
	}

	from = len(ledgerEntries(t, g, "count"))
	out = runCountScript(t, base, `
const OpenAI = sdk("openai").default;
const oa = new OpenAI({ apiKey: "mg-count", baseURL: process.env.GATEWAY + "/v1", maxRetries: 0 });
const r = await oa.embeddings.create({ model: "p-embed", input: "hello world" });
console.log("usage", JSON.stringify(r.usage));
`)
	if !strings.Contains(out, `usage {"prompt_tokens":3,"total_tokens":3}`) {
		t.Fatalf("the SDK's embeddings: %s", out)
	}
	if got := settledSince(t, g, "count", from); got != 3000 {
		t.Errorf("embeddings reporting 3 prompt tokens charged %s, want 0.003", money.Format(got))
	}

	// A rerank makes no output tokens either: without a token count, its input estimate, which
	// counts its query once per document: its body's tokens, and the query's ("q", one token)
	// once more for the second document.
	from = len(ledgerEntries(t, g, "count"))
	if r := call(t, "POST", base+"/v1/rerank", "mg-count", map[string]any{"model": "p-embed", "query": "q", "documents": []string{"a", "b"}}); r.status != 200 {
		t.Fatalf("rerank = %d %s", r.status, r.body)
	}
	if got, want := settledSince(t, g, "count", from), up.inputEstimate(t, "/oa/v1/rerank")+1*1000; got != want {
		t.Errorf("a rerank without a token count charged %s, want its input estimate %s", money.Format(got), money.Format(want))
	}
}

// TestGenerationWithoutUsageIsChargedItsEstimate: a generateContent whose answer reports no
// usage is still charged its estimate, its input and max_output's 4096 output tokens.
func TestGenerationWithoutUsageIsChargedItsEstimate(t *testing.T) {
	up := startCountingUpstream(t)
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": usageLog})
	req, _ := http.NewRequest("POST", base+"/v1beta/models/p-gemini:generateContent", strings.NewReader(`{"contents":[{"parts":[{"text":"hi"}]}]}`))
	req.Header.Set("X-Goog-Api-Key", "mg-count")
	req.Header.Set("Content-Type", "application/json")
	if r := do(t, req); r.status != 200 {
		t.Fatalf("generateContent = %d %s", r.status, r.body)
	}
	want := up.inputEstimate(t, "/ge/v1beta/models/p-gemini:generateContent") + 4096*2000
	if got := settledSince(t, g, "count", 0); got != want {
		t.Errorf("a generation without usage charged %s, want its estimate %s", money.Format(got), money.Format(want))
	}
}

// settledSince is what the settlements among an account's ledger entries after its first from
// charged, once a hold has ended there (see endedEntries).
func settledSince(t *testing.T, g *gateway, account string, from int) int64 {
	t.Helper()
	var charged int64
	for _, e := range endedEntries(t, g, account, from) {
		if e["kind"] != "settle" {
			continue
		}
		c, err := money.Parse(e["charged"].(string))
		if err != nil {
			t.Fatalf("entry %v: %v", e, err)
		}
		charged += c
	}
	return charged
}
