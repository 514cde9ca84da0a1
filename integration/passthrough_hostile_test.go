package integration

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// hostilePassCaddyfile routes priced chat, messages and generate-content models to one fake
// upstream ({{up}}) that answers each in its provider's published shape, for an account the
// tests credit; {{port}} through transport mediagw, {{sim_port}} through the older form.
const hostilePassCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider oa {
			base_url {{up}}/oa/v1
			api_key oa-upstream-key
			models hostile-chat
		}
		provider an {
			base_url {{up}}/an/v1
			api_key an-upstream-key
			auth_style x-api-key
			models hostile-claude
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
		price hostile-claude {
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

# The older form: one reverse_proxy to the provider's address.
http://127.0.0.1:{{sim_port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {{up}}
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

// hostilePassUpstream answers chat completions with a usage of 4000 prompt tokens (as for a
// prompt whose input is mostly an image or an earlier conversation, not the body's bytes) and 10
// completion tokens, gzipped for a client that accepts gzip, as OpenAI's edge answers. It answers generateContent with geminiFunctionCallAnswer, and its SSE stream
// (alt=sse) with a text chunk and then that answer as the last chunk. It answers Anthropic
// messages as prompt caching documents them: of the request's 4000 input tokens, 10 are
// input_tokens and 3990 are cache_creation_input_tokens (written to the cache) without a stream,
// cache_read_input_tokens (read from it) with one; 6000 output tokens either way.
func hostilePassUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/ge/v1beta/models/hostile-gemini:generateContent" && r.Header.Get("X-Goog-Api-Key") == "ge-upstream-key":
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			fmt.Fprint(w, geminiFunctionCallAnswer)
		case r.URL.Path == "/ge/v1beta/models/hostile-gemini:streamGenerateContent" && r.URL.Query().Get("alt") == "sse" && r.Header.Get("X-Goog-Api-Key") == "ge-upstream-key":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"thinking\"}]},\"index\":0}],"+
				"\"usageMetadata\":{\"promptTokenCount\":4000,\"candidatesTokenCount\":3000,\"totalTokenCount\":7000},\"modelVersion\":\"hostile-gemini\"}\r\n\r\n")
			fmt.Fprint(w, "data: "+geminiFunctionCallAnswer+"\r\n\r\n")
		case r.URL.Path == "/oa/v1/chat/completions" && r.Header.Get("Authorization") == "Bearer oa-upstream-key":
			// As OpenAI's edge does: a JSON answer is gzipped for a client that accepts gzip.
			answer := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"hostile-chat","choices":[{"index":0,` +
				`"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4000,"completion_tokens":10,"total_tokens":4010}}`
			w.Header().Set("Content-Type", "application/json")
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				fmt.Fprint(w, answer)
				return
			}
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprint(zw, answer)
			zw.Close()
		case r.URL.Path == "/oa/v1/responses" && r.Header.Get("Authorization") == "Bearer oa-upstream-key":
			// A Responses stream as OpenAI documents it, whose response.completed event carries
			// the whole response: here a 300 KiB output text, and the usage after it (10000 input
			// tokens, as for a long earlier conversation named by previous_response_id, and 5000
			// output tokens, most of them reasoning that no delta shows).
			w.Header().Set("Content-Type", "text/event-stream")
			// Every event echoes the request's instructions, as OpenAI's do: a client that sends
			// more than 1 MiB of them makes every event longer than the gateway holds whole.
			var req struct{ Instructions string }
			_ = json.Unmarshal(body, &req)
			instructions, _ := json.Marshal(req.Instructions)
			text := strings.Repeat("all work and no play ", 300<<10/21)
			events := []string{
				`{"type":"response.created","sequence_number":0,"response":{"id":"resp_hostile1","object":"response","created_at":1,"status":"in_progress",` +
					`"instructions":` + string(instructions) + `,"model":"hostile-chat","output":[],"usage":null}}`,
			}
			for i := range 3 {
				events = append(events, fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_hostile1","output_index":0,"content_index":0,"delta":"all work "}`, i+1))
			}
			events = append(events, `{"type":"response.completed","sequence_number":4,"response":{"id":"resp_hostile1","object":"response","created_at":1,`+
				`"status":"completed","instructions":`+string(instructions)+`,"model":"hostile-chat","output":[{"type":"message","id":"msg_hostile1","status":"completed","role":"assistant",`+
				`"content":[{"type":"output_text","text":"`+text+`","annotations":[]}]}],"usage":{"input_tokens":10000,"input_tokens_details":{"cached_tokens":0},`+
				`"output_tokens":5000,"output_tokens_details":{"reasoning_tokens":4000},"total_tokens":15000},"user":null,"metadata":{}}}`)
			for _, e := range events {
				var head struct{ Type string }
				_ = json.Unmarshal([]byte(e), &head)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, e)
			}
		case r.URL.Path == "/an/v1/messages" && r.Header.Get("X-Api-Key") == "an-upstream-key" && r.Header.Get("Anthropic-Version") != "":
			if !strings.Contains(string(body), `"stream":true`) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"hostile-claude","content":[{"type":"text","text":"done"}],`+
					`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":3990,"cache_read_input_tokens":0,"output_tokens":6000}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range []string{
				`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"hostile-claude","content":[],"stop_reason":null,"stop_sequence":null,` +
					`"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":3990,"output_tokens":1}}}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6000}}`,
				`{"type":"message_stop"}`,
			} {
				var head struct{ Type string }
				_ = json.Unmarshal([]byte(e), &head)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, e)
			}
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
	olderForm := "http://127.0.0.1:" + g.vars["sim_port"]
	keys := keysEnv{g: g}
	if r := keys.adminMoney(t, "POST", "/mediagw/accounts/hostile/credit", `{"amount":"100","note":"test"}`,
		map[string]string{"Idempotency-Key": "hostile-credit-1", "Content-Type": "application/json"}); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	// balance waits for the account's balance to be want, with nothing held, and returns the
	// balance it last saw: a request's hold is settled as it ends, which may be just after its
	// client has read the answer.
	balance := func(t *testing.T, want string) string {
		t.Helper()
		var b response
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b = call(t, "GET", "http://"+g.admin+"/mediagw/accounts/hostile/balance", "", nil); b.field("held") == "0" && b.field("balance") == want {
				break
			}
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
			if got := balance(t, c.want); got != c.want {
				t.Fatalf("after %s the balance is %s, want %s (16 charged for the usageMetadata)", c.path, got, c.want)
			}
		}
	})

	// A client marks its prompt for caching (cache_control, as Anthropic's SDK sends it): the
	// upstream then reports most input tokens as cache_creation_input_tokens, or on the next
	// request cache_read_input_tokens, besides input_tokens. They are input all the same, the
	// writes at Anthropic's 5-minute write rate (1.25 × input, the default of
	// cache_write_5m_tokens): the first request is charged 10 input tokens (0.01), 3990 written
	// (4.9875) and 6000 output tokens (12), 16.9975; the second, reading them, its 10 input
	// tokens (0.01), 3990 read at Anthropic's read rate (0.1 × input, the default of
	// cache_read_tokens: 0.399) and 6000 output tokens (12), 12.409.
	t.Run("anthropic prompt caching", func(t *testing.T) {
		for _, c := range []struct{ stream, want string }{{"false", "51.0025"}, {"true", "38.5935"}} {
			body := `{"model":"hostile-claude","max_tokens":8000,"stream":` + c.stream + `,"system":[{"type":"text","text":"` +
				strings.Repeat("a long shared prefix ", 200) + `","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"go"}]}`
			req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Api-Key", "mg-hostile-key")
			req.Header.Set("Anthropic-Version", "2023-06-01")
			if r := do(t, req); r.status != 200 || !strings.Contains(string(r.body), `"done"`) {
				t.Fatalf("messages (stream %s) = %d %s", c.stream, r.status, r.body)
			}
			if got := balance(t, c.want); got != c.want {
				t.Fatalf("after messages (stream %s) the balance is %s, want %s (16.9975, then 12.409 charged: 3990 input tokens written, then read, 6000 output)", c.stream, got, c.want)
			}
		}
	})

	// Go's HTTP client asks for gzip on every request (and decodes the answer itself), so the
	// openai-go SDK does, as Node's fetch does. An upstream that gzips its answer must still
	// have its usage read: the chat is charged its 4000 prompt tokens (4) and 10 completion
	// tokens (0.02), not the estimate's input of one token per 4 bytes of body; through either
	// form of the reverse_proxy.
	t.Run("usage of an answer the client accepts gzipped", func(t *testing.T) {
		for _, c := range []struct{ site, want string }{{base, "34.5735"}, {olderForm, "30.5535"}} {
			oa := openai.NewClient(option.WithBaseURL(c.site+"/v1/"), option.WithAPIKey("mg-hostile-key"), option.WithMaxRetries(0))
			chat, err := oa.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:     "hostile-chat",
				MaxTokens: openai.Int(10),
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("describe it")},
			})
			if err != nil || chat.Choices[0].Message.Content != "done" || chat.Usage.PromptTokens != 4000 {
				t.Fatalf("chat through %s = %+v, %v", c.site, chat, err)
			}
			if got := balance(t, c.want); got != c.want {
				t.Fatalf("after the chat through %s the balance is %s, want %s (4.02 charged: 4000 prompt tokens, 10 completion)", c.site, got, c.want)
			}
		}
	})

	// A Responses stream whose last event, the whole response with its usage, is longer than
	// the usage reader keeps of a line read piecemeal (a long output, or long instructions, which
	// every event echoes): its usage is still read and charged (10000 input tokens: 10, 5000
	// output: 10), not the three deltas seen and the body's estimate.
	t.Run("responses stream whose last event is long", func(t *testing.T) {
		oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-hostile-key"), option.WithMaxRetries(0))
		// Without instructions the last event is 300 KiB; with 1.1 MiB of them, every event
		// is longer than the gateway holds whole (1 MiB), and passes in pieces. The usage is
		// read all the same, not the estimate charged (its input is the body's bytes / 4, more
		// here, but for a request whose input is mostly an earlier response, much less).
		if r := keys.adminMoney(t, "POST", "/mediagw/accounts/hostile/credit", `{"amount":"400","note":"test"}`,
			map[string]string{"Idempotency-Key": "hostile-credit-2", "Content-Type": "application/json"}); r.status != 200 {
			t.Fatalf("credit = %d %s", r.status, r.body)
		}
		for _, c := range []struct {
			instructions string
			want         string
		}{{"", "410.5535"}, {strings.Repeat("be brief ", 1100<<10/9), "390.5535"}} {
			params := responses.ResponseNewParams{Model: "hostile-chat", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go on")}}
			if c.instructions != "" {
				params.Instructions = openai.String(c.instructions)
			}
			stream := oa.Responses.NewStreaming(context.Background(), params)
			var usage responses.ResponseUsage
			for stream.Next() {
				if e := stream.Current(); e.Type == "response.completed" {
					usage = e.Response.Usage
				}
			}
			if err := stream.Err(); err != nil || usage.InputTokens != 10000 {
				t.Fatalf("stream: %v, usage %+v", err, usage)
			}
			if got := balance(t, c.want); got != c.want {
				t.Fatalf("after the stream (%d bytes of instructions) the balance is %s, want %s (20 charged: 10000 input tokens, 5000 output)", len(c.instructions), got, c.want)
			}
		}
	})
}
