package integration

import (
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

// upstreamCutCaddyfile routes chat completions and Responses to a fake OpenAI upstream
// ({{up_url}}) that breaks its streams off, with output-priced models (0.001 a token).
const upstreamCutCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models upcut-chat upcut-resp
		}
		price upcut-chat {
			output_tokens 1000
		}
		price upcut-resp {
			output_tokens 1000
		}
		key mg-upstream-cut {
			account upcutters
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {{up_host}} {
			header_up Host {upstream_hostport}
		}
	}
}
`

// upstreamCut is how the fake upstream ends a stream: after deltas content deltas, it drops the
// connection in the middle of the chunked body (cut), or ends the body cleanly without the final
// usage event and without [DONE] (a truncated stream). A finished stream also has the events
// that carry no output around its deltas, as real streams have them: a chat stream's chunk of an
// empty content, one of its role alone and its final chunk (an empty delta and the
// finish_reason), then [DONE]; a Responses stream's empty delta and the .done events of its text.
type upstreamCut struct {
	deltas   int
	cut      bool
	finished bool
}

// upstreamCuts names the scenarios by the prompt that asks for them.
var upstreamCuts = map[string]upstreamCut{
	"cut after 5":       {deltas: 5, cut: true},
	"cut before output": {deltas: 0, cut: true},
	"cut after 300":     {deltas: 300, cut: true},
	"truncated after 4": {deltas: 4},
	"finished after 3":  {deltas: 3, finished: true},
	"finished, cut":     {deltas: 2, finished: true, cut: true},
	"finished empty":    {finished: true},
}

// fakeOpenAICuts answers streamed chat completions and Responses as OpenAI's streaming
// reference shows them (chat.completion.chunk objects after the chunk of the role, which
// carries no token; response.created,
// response.in_progress, response.output_item.added, response.content_part.added and
// response.output_text.delta events), ending each as the prompt's upstreamCut says: it never
// sends the usage chunk or response.completed.
func fakeOpenAICuts(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" {
			http.Error(w, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`, 401)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var plan upstreamCut
		found := false
		for prompt, p := range upstreamCuts {
			if strings.Contains(string(body), prompt) {
				plan, found = p, true
			}
		}
		if !found {
			http.Error(w, `{"error":{"message":"unknown scenario","type":"invalid_request_error"}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		flusher := w.(http.Flusher)
		event := func(name string, v any) {
			b, _ := json.Marshal(v)
			if name != "" {
				fmt.Fprintf(w, "event: %s\n", name)
			}
			fmt.Fprintf(w, "data: %s\n\n", b)
			flusher.Flush()
		}
		switch r.URL.Path {
		case "/v1/chat/completions":
			var finish any // null until the final chunk
			chunk := func(delta map[string]any) {
				event("", map[string]any{"id": "chatcmpl-cut", "object": "chat.completion.chunk", "created": 1, "model": "upcut-chat",
					"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			}
			chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil})
			if plan.finished {
				chunk(map[string]any{"content": ""})
			}
			for i := range plan.deltas {
				chunk(map[string]any{"content": fmt.Sprint("w", i, " ")})
			}
			if plan.finished {
				chunk(map[string]any{"role": "assistant"})
				finish = "stop"
				chunk(map[string]any{})
				fmt.Fprint(w, "data: [DONE]\n\n")
				flusher.Flush()
			}
		case "/v1/responses":
			seq := 0
			typed := func(typ string, v map[string]any) {
				v["type"], v["sequence_number"] = typ, seq
				seq++
				event(typ, v)
			}
			response := map[string]any{"id": "resp_cut", "object": "response", "created_at": 1, "status": "in_progress",
				"model": "upcut-resp", "output": []any{}, "usage": nil}
			typed("response.created", map[string]any{"response": response})
			typed("response.in_progress", map[string]any{"response": response})
			if plan.deltas > 0 || plan.finished {
				typed("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
					"id": "msg_cut", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
				typed("response.content_part.added", map[string]any{"item_id": "msg_cut", "output_index": 0, "content_index": 0,
					"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			}
			if plan.finished {
				typed("response.output_text.delta", map[string]any{"item_id": "msg_cut", "output_index": 0, "content_index": 0,
					"delta": "", "logprobs": []any{}})
			}
			text := ""
			for i := range plan.deltas {
				typed("response.output_text.delta", map[string]any{"item_id": "msg_cut", "output_index": 0, "content_index": 0,
					"delta": fmt.Sprint("w", i, " "), "logprobs": []any{}})
				text += fmt.Sprint("w", i, " ")
			}
			if plan.finished {
				part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
				typed("response.output_text.done", map[string]any{"item_id": "msg_cut", "output_index": 0, "content_index": 0,
					"text": text, "logprobs": []any{}})
				typed("response.content_part.done", map[string]any{"item_id": "msg_cut", "output_index": 0, "content_index": 0,
					"part": part})
				typed("response.output_item.done", map[string]any{"output_index": 0, "item": map[string]any{
					"id": "msg_cut", "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}})
			}
		default:
			http.NotFound(w, r)
			return
		}
		if plan.cut {
			panic(http.ErrAbortHandler) // net/http drops the connection without ending the body
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestUpstreamCutStreamSettlesFromDeltasSeen: a chat completion or Responses stream that the
// upstream breaks off after content deltas (the connection dropped mid-body, or the body ended
// without its usage event) is charged the deltas seen, one output token each, as a stream the
// client leaves is; never more than the hold's output estimate (max_tokens 200: 300 deltas are
// charged 200); one broken off before any output is released. The events that carry no output
// are not counted: a chat stream's chunks of an empty content or its role alone and its final
// chunk (an empty delta, the finish_reason), a Responses stream's empty delta and its .done
// events, so that a finished stream without usage (no include_usage) is charged its 3 deltas, not
// 5, and one that finished with no output at all is charged no output token (not its estimate).
// The clients are openai-go's streams, which see the cut as an error or an early end.
func TestUpstreamCutStreamSettlesFromDeltasSeen(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	up := fakeOpenAICuts(t)
	base, g := startSimGateway(t, upstreamCutCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	admin := "http://" + g.admin + "/mediagw/accounts/upcutters"
	keysEnv{g: g}.credit(t, "upcutters", "10", "upstream-cut-1")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-upstream-cut"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	chat := func(prompt string) (text string, err error) {
		stream := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: "upcut-chat", MaxTokens: openai.Int(200),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		})
		defer stream.Close()
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) > 0 {
				text += c.Choices[0].Delta.Content
			}
		}
		return text, stream.Err()
	}
	respond := func(prompt string) (text string, err error) {
		stream := oa.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model: "upcut-resp", MaxOutputTokens: openai.Int(200),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
		})
		defer stream.Close()
		for stream.Next() {
			if e := stream.Current(); e.Type == "response.output_text.delta" {
				text += e.Delta
			}
		}
		return text, stream.Err()
	}
	// entries is the ledger's hold ends so far, as "kind amount charged".
	ends := func() []string {
		var out []string
		for _, e := range call(t, "GET", admin+"/ledger?limit=100", "", nil).json(t)["entries"].([]any) {
			m := e.(map[string]any)
			if m["kind"] == "settle" || m["kind"] == "release" {
				out = append(out, fmt.Sprint(m["kind"], " ", m["charged"]))
			}
		}
		return out
	}
	for _, tc := range []struct {
		api, prompt string
		deltas      int
		want        string // the hold's end in the ledger
	}{
		{"chat", "cut after 5", 5, "settle 0.005"},
		{"chat", "truncated after 4", 4, "settle 0.004"},
		{"chat", "cut after 300", 300, "settle 0.2"},
		{"chat", "cut before output", 0, "release <nil>"},
		{"chat", "finished after 3", 3, "settle 0.003"},
		{"chat", "finished, cut", 2, "settle 0.002"},
		{"chat", "finished empty", 0, "settle 0"},
		{"responses", "cut after 5", 5, "settle 0.005"},
		{"responses", "truncated after 4", 4, "settle 0.004"},
		{"responses", "cut after 300", 300, "settle 0.2"},
		{"responses", "cut before output", 0, "release <nil>"},
		{"responses", "finished after 3", 3, "settle 0.003"},
		{"responses", "finished, cut", 2, "settle 0.002"},
		{"responses", "finished empty", 0, "settle 0"},
	} {
		before := len(ends())
		stream := chat
		if tc.api == "responses" {
			stream = respond
		}
		text, err := stream(tc.prompt)
		if got := strings.Count(text, " "); got != tc.deltas {
			t.Fatalf("%s %q: the client read %d deltas (%v); want %d", tc.api, tc.prompt, got, err, tc.deltas)
		}
		var got []string
		waitFor(t, tc.api+" "+tc.prompt+"'s hold to end", func() bool { got = ends(); return len(got) > before })
		if got[before] != tc.want {
			t.Errorf("%s %q (client error %v): the hold ended %q; want %q", tc.api, tc.prompt, err, got[before], tc.want)
		}
	}
	if b := call(t, "GET", admin+"/balance", "", nil); b.field("held") != "0" {
		t.Fatalf("balance after the cut streams: %s; want nothing held", b.body)
	}
}
