package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// streamOptionsCaddyfile is the pass-through form in front of streamOptionsFake: OpenAI, whose
// legacy completions are an added endpoint, and a provider that refuses stream_options
// (omit_stream_options), each model priced 0.001 an input token and 0.002 an output token.
const streamOptionsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{fake_url}}/v1
			api_key openai-operator-key
			models so-instruct
		}
		provider strict {
			base_url {{fake_url}}/strict/v1
			api_key strict-operator-key
			models so-chat
			omit_stream_options
		}
		provider lax {
			base_url {{fake_url}}/lax/v1
			api_key lax-operator-key
			models so-lax-instruct
		}
		price so-lax-instruct {
			input_tokens 1000
			output_tokens 2000
		}
		price so-instruct {
			input_tokens 1000
			output_tokens 2000
		}
		price so-chat {
			input_tokens 1000
			output_tokens 2000
		}
		key mg-so-legacy {
			account so-legacy
		}
		key mg-so-whole {
			account so-whole
		}
		key mg-so-left {
			account so-left
		}
		key mg-so-azure {
			account so-azure
		}
		key mg-so-lax {
			account so-lax
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route {
			endpoint POST /v1/completions
			endpoint POST /openai/deployments/{model}/chat/completions
		}
		reverse_proxy {
			dynamic mediagw
			transport mediagw
			lb_policy first
		}
	}
}
`

// streamOptionsFake serves OpenAI's legacy completions, streamed as its reference describes
// (text chunks; a last chunk of empty choices with the usage only when the request sets
// stream_options.include_usage), and a provider's chat completions that refuses a body with
// stream_options (400, as a strict OpenAI-compatible server refuses an argument it does not
// know) and streams three deltas of a reasoning model without any usage. It keeps the bodies.
type streamOptionsFake struct {
	mu     sync.Mutex
	bodies map[string]string
}

func (f *streamOptionsFake) body(path string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[path]
}

func (f *streamOptionsFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies[r.URL.Path] = string(body)
	f.mu.Unlock()
	var req struct {
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &req) // a body that does not read asks for no usage
	switch {
	case r.URL.Path == "/v1/completions" && r.Header.Get("Authorization") == "Bearer openai-operator-key",
		r.URL.Path == "/lax/v1/completions" && r.Header.Get("Authorization") == "Bearer lax-operator-key":
		if strings.HasPrefix(r.URL.Path, "/lax/") {
			req.StreamOptions = nil // a provider that ignores stream_options: no usage chunk
		}
		w.Header().Set("Content-Type", "text/event-stream")
		const chunk = `{"id":"cmpl-1","object":"text_completion","created":1,"model":"so-instruct","choices":[{"text":%s,"index":0,"logprobs":null,"finish_reason":%s}]}`
		for _, word := range []string{"forty", "-", "two"} {
			fmt.Fprintf(w, "data: "+chunk+"\n\n", strconv.Quote(word), "null")
		}
		fmt.Fprintf(w, "data: "+chunk+"\n\n", `""`, `"stop"`)
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			fmt.Fprint(w, `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"so-instruct","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":503,"total_tokens":513}}`+"\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	case r.URL.Path == "/v1/openai/deployments/so-instruct/chat/completions" && r.Header.Get("Authorization") == "Bearer openai-operator-key":
		// Azure's chat completions, the model named in the path, stream as OpenAI's do.
		w.Header().Set("Content-Type", "text/event-stream")
		writeChatDeltas(w, "so-instruct")
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			fmt.Fprint(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"so-instruct","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":503,"total_tokens":513}}`+"\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	case r.URL.Path == "/strict/v1/chat/completions" && r.Header.Get("Authorization") == "Bearer strict-operator-key":
		if req.StreamOptions != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"Unrecognized request argument supplied: stream_options","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		writeChatDeltas(w, "so-chat")
		fmt.Fprint(w, "data: [DONE]\n\n")
	default:
		http.NotFound(w, r)
	}
}

// startStreamOptionsGateway starts the gateway of streamOptionsCaddyfile in front of a new
// streamOptionsFake, and credits each account 100.
func startStreamOptionsGateway(t *testing.T, accounts ...string) (*streamOptionsFake, string, *gateway) {
	fake := &streamOptionsFake{bodies: map[string]string{}}
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, streamOptionsCaddyfile, map[string]string{"fake_url": up.URL})
	for _, account := range accounts {
		keysEnv{g: g}.credit(t, account, "100", "so-"+account)
	}
	return fake, base, g
}

// TestStreamOptionsPerProvider: a streamed legacy completion (an added /v1/completions) asks
// for its usage as a chat completion does, and is charged the 503 output tokens the provider
// bills (1.016), not its three deltas. A provider with omit_stream_options gets its streamed
// chat as the client sent it (the provider refuses stream_options: before the setting, every
// streamed chat to it was refused), and its stream, which reports no usage, is charged what it
// held (its 2000 max_completion_tokens), not the three deltas it showed: by a client that read
// it whole, and by one that left after its first delta.
func TestStreamOptionsPerProvider(t *testing.T) {
	fake, base, g := startStreamOptionsGateway(t, "so-legacy", "so-whole", "so-left")

	r := call(t, "POST", base+"/v1/completions", "mg-so-legacy", `{"model":"so-instruct","prompt":"what is six times seven?","max_tokens":2000,"stream":true}`)
	if r.status != 200 || !strings.Contains(fake.body("/v1/completions"), `"stream":true,"stream_options":{"include_usage":true}}`) {
		t.Errorf("legacy completion: %d %.300s; the provider got %s", r.status, r.body, fake.body("/v1/completions"))
	}
	if got := settledAs(t, g, "so-legacy"); got != reasoningCharge {
		t.Errorf("legacy completion: %q, want %q: the provider bills 503 completion tokens", got, reasoningCharge)
	}

	chat := `{"model":"so-chat","messages":[{"role":"user","content":"what is six times seven?"}],"max_completion_tokens":2000,"stream":true}`
	r = call(t, "POST", base+"/v1/chat/completions", "mg-so-whole", chat)
	if r.status != 200 || !strings.Contains(string(r.body), "[DONE]") || fake.body("/strict/v1/chat/completions") != chat {
		t.Fatalf("chat to a provider that refuses stream_options: %d %.300s; the provider got %s", r.status, r.body, fake.body("/strict/v1/chat/completions"))
	}
	leaveAfter(t, base+"/v1/chat/completions", "mg-so-left", chat, `"forty"`)
	for _, account := range []string{"so-whole", "so-left"} {
		settledAs(t, g, account)
		ledger := ledgerEnds(t, call(t, "GET", "http://"+g.admin+"/mediagw/accounts/"+account+"/ledger", "", nil), true)
		held, charged, ok := strings.Cut(ledger, "; settle charged ")
		if !ok || strings.TrimPrefix(held, "hold -") != charged || !strings.HasPrefix(charged, "4.") {
			t.Errorf("%s: %q, want the hold (2000 output tokens, 4 and the input's estimate) charged whole", account, ledger)
		}
	}
}

// TestPathModelChatAsksForItsUsage: an added chat completion endpoint that names its model in
// the path (Azure's /openai/deployments/{model}/chat/completions) asks for a stream's usage as
// the body-model one does, and is charged the 503 output tokens the provider bills (1.016), not
// its three deltas; a stream that is no boolean is refused there too.
func TestPathModelChatAsksForItsUsage(t *testing.T) {
	fake, base, g := startStreamOptionsGateway(t, "so-azure")
	path := "/openai/deployments/so-instruct/chat/completions"

	r := call(t, "POST", base+path, "mg-so-azure", `{"messages":[{"role":"user","content":"what is six times seven?"}],"stream":"true"}`)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `"param":"stream"`) || fake.body("/v1"+path) != "" {
		t.Fatalf(`"stream":"true": %d %.300s; want 400 (param stream), nothing forwarded`, r.status, r.body)
	}
	r = call(t, "POST", base+path, "mg-so-azure", `{"messages":[{"role":"user","content":"what is six times seven?"}],"max_tokens":2000,"stream":true}`)
	if r.status != 200 || !strings.Contains(fake.body("/v1"+path), `"stream":true,"stream_options":{"include_usage":true}}`) {
		t.Errorf("chat on a {model} path: %d %.300s; the provider got %s", r.status, r.body, fake.body("/v1"+path))
	}
	if got := settledAs(t, g, "so-azure"); got != reasoningCharge {
		t.Errorf("chat on a {model} path: %q, want %q: the provider bills 503 completion tokens", got, reasoningCharge)
	}
}

// TestLegacyStreamWithoutUsageIsChargedItsChunks: a streamed legacy completion from a provider
// that ignores stream_options (no usage chunk) is charged its three chunks of text (3 output
// tokens and the input's estimate), not the 2000 output tokens it held.
func TestLegacyStreamWithoutUsageIsChargedItsChunks(t *testing.T) {
	_, base, g := startStreamOptionsGateway(t, "so-lax")
	r := call(t, "POST", base+"/v1/completions", "mg-so-lax", `{"model":"so-lax-instruct","prompt":"what is six times seven?","max_tokens":2000,"stream":true}`)
	if r.status != 200 || !strings.Contains(string(r.body), "[DONE]") {
		t.Fatalf("legacy completion: %d %.300s", r.status, r.body)
	}
	settledAs(t, g, "so-lax")
	ledger := ledgerEnds(t, call(t, "GET", "http://"+g.admin+"/mediagw/accounts/so-lax/ledger", "", nil), true)
	if held, charged, ok := strings.Cut(ledger, "; settle charged "); !ok || !strings.HasPrefix(held, "hold -4.") || !strings.HasPrefix(charged, "0.0") {
		t.Errorf("%q: want the hold of 2000 output tokens (4.…) settled at 3 output tokens and the input's estimate (0.0…)", ledger)
	}
}
