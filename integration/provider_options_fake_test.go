package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// providerOptionsCaddyfile is the README's pass-through form (dynamic mediagw, transport mediagw) in
// front of one fake per protocol, with priced models and one account per case.
const providerOptionsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{fake_url}}/v1
			api_key openai-operator-key
			models atk-chat
		}
		provider anthropic {
			base_url {{fake_url}}/anthropic/v1
			api_key anthropic-upstream-key
			auth_style x-api-key
			models atk-claude
		}
		provider gemini {
			base_url {{fake_url}}/gemini/v1beta
			api_key gemini-upstream-key
			auth_style x-goog-api-key
			models atk-gemini
		}
		price atk-chat {
			input_tokens 1000
			output_tokens 2000
		}
		price atk-claude {
			input_tokens 1000
			output_tokens 2000
		}
		price atk-gemini {
			input_tokens 1000
			output_tokens 2000
		}
		key mg-atk-a {
			account atk-a
		}
		key mg-atk-b {
			account atk-b
		}
		key mg-atk-c {
			account atk-c
		}
		key mg-atk-d {
			account atk-d
		}
		key mg-atk-e {
			account atk-e
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
		}
	}
}
`

// providerOptionsFake answers as the providers' references describe, for their own keys only, and
// records what it received (path, query, headers, body).
//   - Gemini generateContent and streamGenerateContent?alt=sse of a thinking model: its
//     usageMetadata counts 10 prompt tokens, 5 candidate tokens and 200 thought tokens
//     (thoughtsTokenCount, billed as output by Google), total 215. Like every Google API it
//     honours the response field mask of the system parameters (docs.cloud.google.com/apis/docs/
//     system-parameters): the fields or $fields query parameter, or the X-Goog-FieldMask
//     header, a comma-separated list of field paths (a.b or a/b); only those fields are returned.
//   - OpenAI chat completions: the usage of 10 prompt and 5 completion tokens, and the
//     service_tier the request asked for (priority processing is billed at a premium rate).
//   - Anthropic messages: 10 input and 5 output tokens, and usage.inference_geo as asked ("us"
//     is billed at 1.1 times the token price on the models that take it).
type providerOptionsFake struct {
	*httptest.Server
	mu   sync.Mutex
	seen []providerOptionsSeen
}

type providerOptionsSeen struct {
	path, query string
	header      http.Header
	body        string
}

func newProviderOptionsFake(t *testing.T) *providerOptionsFake {
	f := &providerOptionsFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *providerOptionsFake) received() []providerOptionsSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]providerOptionsSeen(nil), f.seen...)
}

func (f *providerOptionsFake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.seen = append(f.seen, providerOptionsSeen{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(body)})
	f.mu.Unlock()
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasPrefix(r.URL.Path, "/gemini/v1beta/models/atk-gemini:") && r.Header.Get("X-Goog-Api-Key") == "gemini-upstream-key":
		mask := r.Header.Get("X-Goog-FieldMask")
		q := r.URL.Query()
		for _, name := range []string{"fields", "$fields"} {
			if q.Has(name) {
				mask = q.Get(name)
			}
		}
		chunk := func(text string, usage map[string]any) string {
			answer := map[string]any{
				"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}},
				"usageMetadata": usage,
				"modelVersion":  "atk-gemini",
			}
			b, _ := json.Marshal(fieldMasked(answer, mask))
			return string(b)
		}
		full := map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 200, "totalTokenCount": 215}
		switch strings.TrimPrefix(r.URL.Path, "/gemini/v1beta/models/atk-gemini:") {
		case "generateContent":
			io.WriteString(w, chunk("thought hard, said little", full))
		case "streamGenerateContent":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\r\n\r\n", chunk("thought hard, ", map[string]any{"promptTokenCount": 10, "totalTokenCount": 10}))
			fmt.Fprintf(w, "data: %s\r\n\r\n", chunk("said little", full))
		default:
			http.NotFound(w, r)
		}
	case r.URL.Path == "/v1/chat/completions" && r.Header.Get("Authorization") == "Bearer openai-operator-key":
		tier, _ := req["service_tier"].(string)
		if tier == "" || tier == "auto" {
			tier = "default"
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"atk-chat","choices":[{"index":0,"message":{"role":"assistant","content":"fast"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15},"service_tier":%q}`, tier)
	case r.URL.Path == "/anthropic/v1/messages" && r.Header.Get("X-Api-Key") == "anthropic-upstream-key":
		geo, _ := req["inference_geo"].(string)
		if geo == "" {
			geo = "global"
		}
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"atk-claude","content":[{"type":"text","text":"here"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5,"inference_geo":%q}}`, geo)
	default:
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"unknown route or key"}}`)
	}
}

// fieldMasked keeps only the fields of v that the Google field mask names (comma-separated
// paths, segments split at '.' or '/'); an empty mask keeps everything. Arrays are masked
// element by element, as Google does.
func fieldMasked(v any, mask string) any {
	if strings.TrimSpace(mask) == "" {
		return v
	}
	tree := map[string]any{}
	for _, path := range strings.Split(mask, ",") {
		node := tree
		for _, seg := range strings.FieldsFunc(strings.TrimSpace(path), func(r rune) bool { return r == '.' || r == '/' }) {
			next, ok := node[seg].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[seg] = next
			}
			node = next
		}
	}
	return applyMask(v, tree)
}

func applyMask(v any, tree map[string]any) any {
	if len(tree) == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, sub := range tree {
			if val, ok := x[k]; ok {
				out[k] = applyMask(val, sub.(map[string]any))
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = applyMask(x[i], tree)
		}
		return out
	}
	return v
}
