package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// longStreamCaddyfile serves a chat model priced by its output (0.001 a token, no max_output:
// a request that names no maximum is held at billing.DefaultMaxOutput, 4096 tokens) from a fake
// OpenAI chat upstream ({{up_url}}), through the README's pass-through site.
const longStreamCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models long-chat
		}
		price long-chat {
			output_tokens 1000
		}
		key mg-long-stream {
			account long-stream
		}
	}
}

` + readmePassThroughSite

// startDeltaStreamingChat is an OpenAI chat upstream that streams every chat as 5000 content
// deltas of one token each, a final chunk and [DONE], without usage (a client that does not ask
// for stream_options.include_usage gets none from OpenAI), whatever max_tokens says.
func startDeltaStreamingChat(t *testing.T) string {
	return startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			writeFakeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no such route", "type": "invalid_request_error"}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta map[string]any, finish any) {
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-long", "object": "chat.completion.chunk", "created": 1, "model": "long-chat",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		chunk(map[string]any{"role": "assistant", "content": ""}, nil)
		for range 5000 {
			chunk(map[string]any{"content": " word"}, nil)
		}
		chunk(map[string]any{}, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	})).URL
}

// TestStreamWithoutUsageIsChargedItsLength: a chat stream that reports no usage is charged one
// output token per delta of output; the count is bounded by the maximum the request named (a
// provider streaming 5000 deltas to max_tokens 100 is charged 100 tokens, 0.1), but a request
// that named none has no such bound: the 4096 tokens it was held at are the operator's estimate
// (max_output, else the default), not a length the model keeps to, so its 5000 deltas are
// charged 5000 tokens, 5, with openai-go. Before, they were charged 4096 (4.096): the rest of
// every long answer was free. A limit of zero or less (max_completion_tokens -1, which some
// OpenAI-compatible servers read as no limit, and take before max_tokens) beside max_tokens 10
// names no bound either: held 4.096 and charged the 5000 deltas, not capped at 10 (0.01).
func TestStreamWithoutUsageIsChargedItsLength(t *testing.T) {
	base, g := startSimGateway(t, longStreamCaddyfile, map[string]string{"up_url": startDeltaStreamingChat(t)})
	keysEnv{g: g, base: base}.credit(t, "long-stream", "100", "long-stream-1")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-long-stream"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		name      string
		maxTokens int64
		// maxCompletion, when not 0, is sent as max_completion_tokens.
		maxCompletion int64
		held, end     string
	}{
		{"no max_tokens", 0, 0, "4.096", "settle 5"},
		{"max_tokens 100", 100, 0, "0.1", "settle 0.1"},
		{"max_tokens 10 beside max_completion_tokens -1", 10, -1, "4.096", "settle 5"},
	} {
		params := openai.ChatCompletionNewParams{Model: "long-chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("write at length")}}
		if c.maxTokens > 0 {
			params.MaxTokens = openai.Int(c.maxTokens)
		}
		if c.maxCompletion != 0 {
			params.MaxCompletionTokens = openai.Int(c.maxCompletion)
		}
		from := len(ledgerEntries(t, g, "long-stream"))
		stream := oa.Chat.Completions.NewStreaming(ctx, params)
		deltas := 0
		for stream.Next() {
			if ch := stream.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				deltas++
			}
		}
		if err := stream.Err(); err != nil || deltas != 5000 {
			t.Fatalf("%s: %d deltas, %v", c.name, deltas, err)
		}
		if held, end := toolEnded(t, g, "long-stream", from); held != c.held || end != c.end {
			t.Errorf("%s: held %s, %s; want held %s, %s", c.name, held, end, c.held, c.end)
		}
	}
}
