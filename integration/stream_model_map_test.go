package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// splitEventsCaddyfile serves chat-alias, which the provider's model_map sends upstream as
// up-chat, from a fake OpenAI chat upstream ({{up_url}}), through the README's pass-through site.
const splitEventsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models chat-alias
			model_map chat-alias up-chat
		}
		key mg-split-events {
			account split-events
		}
	}
}

` + readmePassThroughSite

// startSplitEventChat is an OpenAI chat upstream that streams each chunk's JSON over two data
// lines of one event (the server-sent events standard joins an event's data lines with a line
// feed, which JSON reads as white space), the second beginning at the chunk's "model" member.
func startSplitEventChat(t *testing.T) string {
	return startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			writeFakeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no such route", "type": "invalid_request_error"}})
			return
		}
		if body, _ := io.ReadAll(r.Body); bytes.Contains(body, []byte("[refuse]")) {
			// OpenAI's refusal of a model names it in its message.
			writeFakeJSON(w, 404, map[string]any{"error": map[string]any{"message": "The model `up-chat` does not exist or you do not have access to it.",
				"type": "invalid_request_error", "param": nil, "code": "model_not_found"}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, delta := range []string{"one", " two", ""} {
			var finish any
			if delta == "" {
				finish = "stop"
			}
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-split", "object": "chat.completion.chunk", "created": 1, "model": "up-chat",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": delta}, "finish_reason": finish}}})
			b = bytes.Replace(b, []byte(`,"model":`), []byte(",\ndata: \"model\":"), 1)
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i, b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})).URL
}

// TestSplitStreamEventShowsTheClientsModel: a stream event whose JSON comes over several data
// lines (which openai-go, as the standard says, joins with a line feed) shows the client's model
// id, chat-alias, and never the provider's, up-chat, as a one-line event does; the content
// arrives whole. Before, each data line was read alone, none was one JSON object, and every
// chunk showed up-chat.
func TestSplitStreamEventShowsTheClientsModel(t *testing.T) {
	base, g := startSimGateway(t, splitEventsCaddyfile, map[string]string{"up_url": startSplitEventChat(t)})
	_ = g
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-split-events"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "chat-alias",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count")}})
	var content strings.Builder
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		chunks++
		if ch.Model != "chat-alias" {
			t.Errorf("chunk %d shows model %q", chunks, ch.Model)
		}
		if len(ch.Choices) > 0 {
			content.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil || chunks != 3 || content.String() != "one two" {
		t.Errorf("%d chunks, content %q, %v", chunks, content.String(), err)
	}
}

// TestErrorAnswerShowsTheClientsModel: an upstream's error answer whose message names the
// provider's id of the model (OpenAI's "The model `up-chat` does not exist ...") shows the
// client's, chat-alias, as a successful answer does; the rest of the error reaches openai-go as
// the provider wrote it. Before, the message named up-chat.
func TestErrorAnswerShowsTheClientsModel(t *testing.T) {
	base, _ := startSimGateway(t, splitEventsCaddyfile, map[string]string{"up_url": startSplitEventChat(t)})
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-split-events"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "chat-alias",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("[refuse]")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" ||
		apiErr.Message != "The model `chat-alias` does not exist or you do not have access to it." {
		t.Fatalf("error %v: %s", err, apiErr.RawJSON())
	}
}
