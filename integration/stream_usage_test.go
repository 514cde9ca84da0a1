package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// streamUsageCaddyfile is the README's pass-through form (dynamic mediagw, transport mediagw) in
// front of a fake OpenAI and a fake Anthropic, with priced models and one account per case.
const streamUsageCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{fake_url}}/v1
			api_key openai-operator-key
			models su-chat
		}
		provider anthropic {
			base_url {{fake_url}}/anthropic/v1
			api_key anthropic-upstream-key
			auth_style x-api-key
			models su-claude
		}
		price su-chat {
			input_tokens 1000
			output_tokens 2000
		}
		price su-claude {
			input_tokens 1000
			output_tokens 2000
		}
		key mg-su-a {
			account su-a
		}
		key mg-su-b {
			account su-b
		}
		key mg-su-c {
			account su-c
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

// reasoningCharge is the charge of the usage of every fake stream here: a reasoning model that reads 10 tokens,
// reasons for 500 (billed as output, never streamed) and answers in 3: 10 × 0.001 + 503 × 0.002.
const reasoningCharge = "settle charged 1.016"

// reasoningChatFake is OpenAI's chat completions for a reasoning model, streamed as the reference
// describes: the reasoning is not streamed (it is billed as completion tokens, counted in
// completion_tokens_details.reasoning_tokens), the answer comes as content deltas, and a usage
// chunk (empty choices) is sent before [DONE] only when the request sets
// stream_options.include_usage, after pause. It keeps the bodies it got.
type reasoningChatFake struct {
	*httptest.Server
	pause  time.Duration
	mu     sync.Mutex
	bodies []string
}

func newReasoningChatFake(t *testing.T, pause time.Duration) *reasoningChatFake {
	f := &reasoningChatFake{pause: pause}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *reasoningChatFake) lastBody() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

func (f *reasoningChatFake) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer openai-operator-key" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	f.mu.Unlock()
	var req struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(body, &req) // a body that does not read asks for no usage
	w.Header().Set("Content-Type", "text/event-stream")
	writeChatDeltas(w, "su-chat")
	w.(http.Flusher).Flush()
	time.Sleep(f.pause)
	if req.StreamOptions.IncludeUsage {
		fmt.Fprint(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"su-chat","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":503,"total_tokens":513,"completion_tokens_details":{"reasoning_tokens":500}}}`+"\n\n")
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// writeChatDeltas writes the chunks of a streamed chat completion of model that answers
// "forty-two" in three deltas: its role chunk, the deltas and its final chunk, without usage.
func writeChatDeltas(w io.Writer, model string) {
	chunk := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":` + strconv.Quote(model) + `,"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`
	fmt.Fprintf(w, "data: "+chunk+"\n\n", `{"role":"assistant","content":""}`, "null")
	for _, word := range []string{"forty", "-", "two"} {
		fmt.Fprintf(w, "data: "+chunk+"\n\n", `{"content":`+strconv.Quote(word)+`}`, "null")
	}
	fmt.Fprintf(w, "data: "+chunk+"\n\n", `{}`, `"stop"`)
}

// settledAs waits for account's settlement and returns the ledger's last entry.
func settledAs(t *testing.T, g *gateway, account string) string {
	t.Helper()
	admin := "http://" + g.admin + "/mediagw/accounts/" + account
	var ledger string
	waitFor(t, account+"'s settlement", func() bool {
		ledger = ledgerEnds(t, call(t, "GET", admin+"/ledger", "", nil), false)
		return strings.Contains(ledger, "settle")
	})
	return ledger
}

// TestStreamedChatAsksForItsUsage: a streamed chat of a reasoning model sent without
// stream_options.include_usage (the OpenAI SDKs' default) is sent on with include_usage true, so
// that it is charged the 503 completion tokens the provider bills (500 of them reasoning, never
// streamed), as the same call with include_usage is, not one token per delta it saw (3). The
// client gets the usage chunk. The body's other members and stream_options' other members reach
// the provider as sent; an include_usage false is replaced.
func TestStreamedChatAsksForItsUsage(t *testing.T) {
	up := newReasoningChatFake(t, 0)
	base, g := startSimGateway(t, streamUsageCaddyfile, map[string]string{"fake_url": up.URL})
	for _, account := range []string{"su-a", "su-b", "su-c"} {
		keysEnv{g: g}.credit(t, account, "100", "su-"+account)
	}
	ask := func(key, extra string) response {
		t.Helper()
		r := call(t, "POST", base+"/v1/chat/completions", key,
			`{"model":"su-chat","messages":[{"role":"user","content":"what is six times seven?"}],"max_completion_tokens":2000,"stream":true`+extra+`}`)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", extra, r.status, r.body)
		}
		return r
	}
	ask("mg-su-a", `,"stream_options":{"include_usage":true}`)
	without := ask("mg-su-b", "")
	var sent map[string]json.RawMessage
	if err := json.Unmarshal([]byte(up.lastBody()), &sent); err != nil {
		t.Fatalf("the provider got no JSON object: %v %s", err, up.lastBody())
	}
	if string(sent["stream_options"]) != `{"include_usage":true}` || string(sent["max_completion_tokens"]) != "2000" || string(sent["model"]) != `"su-chat"` {
		t.Errorf("the provider got %s", up.lastBody())
	}
	if !strings.Contains(string(without.body), `"choices":[],"usage":{"prompt_tokens":10`) {
		t.Errorf("the client did not get the usage chunk: %s", without.body)
	}
	ask("mg-su-c", `,"stream_options":{"include_obfuscation":false,"include_usage":false}`)
	if got := up.lastBody(); !strings.Contains(got, `"stream_options":{"include_obfuscation":false,"include_usage":true}`) {
		t.Errorf("include_usage false reached the provider as %s", got)
	}
	for _, account := range []string{"su-a", "su-b", "su-c"} {
		if got := settledAs(t, g, account); got != reasoningCharge {
			t.Errorf("%s: %q, want %q: the provider bills 503 completion tokens", account, got, reasoningCharge)
		}
	}
	for _, bad := range []string{`,"stream":true,"stream_options":"yes"`, `,"stream":"true"`, `,"stream":1`} {
		body := `{"model":"su-chat","messages":[{"role":"user","content":"hi"}]` + bad + `}`
		if r := call(t, "POST", base+"/v1/chat/completions", "mg-su-a", body); r.status != 400 {
			t.Errorf("%s: %d %s, want 400", bad, r.status, r.body)
		}
	}
	// The other streaming endpoints refuse a stream that is no boolean too: a lax upstream would
	// stream it, and the gateway, not seeing a stream asked for, would not read on for its usage.
	for path, body := range map[string]string{
		"/v1/responses": `{"model":"su-chat","input":"hi","stream":"true"}`,
		"/v1/messages":  `{"model":"su-claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"stream":"true"}`,
	} {
		if r := call(t, "POST", base+path, "mg-su-a", body); r.status != 400 || !strings.Contains(string(r.body), "stream") {
			t.Errorf("%s with stream \"true\": %d %s, want 400 naming stream", path, r.status, r.body)
		}
	}
}

// leaveAfter sends body to path with key and reads the stream up to the line that holds mark,
// then closes it (the client leaves); it returns what it read.
func leaveAfter(t *testing.T, url, key, body, mark string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() // the answer is whole: leave before the usage
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %s", resp.StatusCode, b)
	}
	var answer strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		answer.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), mark) {
			return answer.String()
		}
	}
	t.Fatalf("the stream ended before %s: %s", mark, answer.String())
	return ""
}

// TestStreamLeftBeforeUsageIsChargedItsUsage: a client that reads a reasoning model's stream to
// the end of its answer and leaves before the event that carries the usage (Responses'
// response.completed, a chat's usage chunk, Anthropic's message_delta), which the provider
// sends a second later, is charged the usage the provider bills (10 input, 503 output tokens:
// 1.016), not the input estimate and one token per delta it saw (0.03): the gateway reads the
// provider's stream on after the client left.
func TestStreamLeftBeforeUsageIsChargedItsUsage(t *testing.T) {
	chat := newReasoningChatFake(t, time.Second)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/chat/completions":
			chat.serve(w, r)
		case r.URL.Path == "/v1/responses" && r.Header.Get("Authorization") == "Bearer openai-operator-key":
			reasoningResponsesStream(w)
		case r.URL.Path == "/anthropic/v1/messages" && r.Header.Get("X-Api-Key") == "anthropic-upstream-key":
			reasoningMessagesStream(w)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, streamUsageCaddyfile, map[string]string{"fake_url": up.URL})
	cases := []struct{ name, account, path, body, answered string }{
		{"Responses, before response.completed", "su-a", "/v1/responses",
			`{"model":"su-chat","input":"what is six times seven?","max_output_tokens":2000,"stream":true}`, `"text":"forty-two"`},
		{"chat, before the usage chunk", "su-b", "/v1/chat/completions",
			`{"model":"su-chat","messages":[{"role":"user","content":"what is six times seven?"}],"max_completion_tokens":2000,"stream":true,"stream_options":{"include_usage":true}}`, `"finish_reason":"stop"`},
		{"Anthropic, before message_delta", "su-c", "/v1/messages",
			`{"model":"su-claude","max_tokens":2000,"messages":[{"role":"user","content":"what is six times seven?"}],"stream":true}`, `"type":"content_block_stop"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keysEnv{g: g}.credit(t, c.account, "100", "su-"+c.account)
			leaveAfter(t, base+c.path, "mg-"+c.account, c.body, c.answered)
			if got := settledAs(t, g, c.account); got != reasoningCharge {
				t.Errorf("charged %q, want %q: the provider bills 503 output tokens for the answer the client has", got, reasoningCharge)
			}
		})
	}
}

// reasoningResponsesStream is a Responses stream of a reasoning model as the reference shows
// it: the reasoning item (its summary empty), the answer's deltas, and a second after the
// answer is done, response.completed with the usage.
func reasoningResponsesStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	n := 0
	event := func(typ, data string) {
		fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d%s}\n\n", typ, typ, n, data)
		n++
	}
	const resp = `"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"su-chat","output":[],"usage":null}`
	event("response.created", ","+resp)
	event("response.in_progress", ","+resp)
	event("response.output_item.added", `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`)
	event("response.output_item.done", `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`)
	event("response.output_item.added", `,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`)
	event("response.content_part.added", `,"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`)
	for _, word := range []string{"forty", "-", "two"} {
		event("response.output_text.delta", `,"item_id":"msg_1","output_index":1,"content_index":0,"delta":`+strconv.Quote(word))
	}
	event("response.output_text.done", `,"item_id":"msg_1","output_index":1,"content_index":0,"text":"forty-two"`)
	w.(http.Flusher).Flush()
	time.Sleep(time.Second) // the client has its answer
	event("response.completed", `,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"su-chat","output":[],"usage":{"input_tokens":10,"output_tokens":503,"output_tokens_details":{"reasoning_tokens":500},"total_tokens":513}}`)
}

// reasoningMessagesStream is an Anthropic Messages stream of a model that thought (its thinking
// billed as output, not streamed here), as the reference shows it: message_start with the input
// usage, the text block, and a second after the block stops, message_delta with the output
// usage, then message_stop.
func reasoningMessagesStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
	event("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"su-claude","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
	event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for _, word := range []string{"forty", "-", "two"} {
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+strconv.Quote(word)+`}}`)
	}
	event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	w.(http.Flusher).Flush()
	time.Sleep(time.Second) // the client has its answer
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":503}}`)
	event("message_stop", `{"type":"message_stop"}`)
}

// TestStreamLeftIsReadOnWithinBounds: a provider's stream that goes on without end after its
// client left is read on for at most the drain's bytes (8 MiB), then cut and settled once as
// any cut stream (its deltas, within the max_tokens it named).
func TestStreamLeftIsReadOnWithinBounds(t *testing.T) {
	var ended sync.WaitGroup
	var mu sync.Mutex
	written := 0
	ended.Add(1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer ended.Done()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"su-chat","choices":[{"index":0,"delta":{"content":"word"},"finish_reason":null}]}` + "\n\n")
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			mu.Lock()
			written += len(chunk)
			mu.Unlock()
		}
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, streamUsageCaddyfile, map[string]string{"fake_url": up.URL})
	keysEnv{g: g}.credit(t, "su-a", "100", "su-su-a")
	leaveAfter(t, base+"/v1/chat/completions", "mg-su-a",
		`{"model":"su-chat","messages":[{"role":"user","content":"go on"}],"max_tokens":100,"stream":true}`, `"content":"word"`)
	done := make(chan struct{})
	go func() { ended.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway still reads the stream its client left")
	}
	mu.Lock()
	defer mu.Unlock()
	if written > 16<<20 {
		t.Errorf("the gateway read %d bytes of a stream its client left", written)
	}
	// max_tokens 100: 100 × 0.002, and the input estimate (one token per 4 bytes of body).
	if got := settledAs(t, g, "su-a"); !strings.HasPrefix(got, "settle charged 0.2") {
		t.Errorf("charged %q, want the 100 output tokens it named and its input", got)
	}
}
