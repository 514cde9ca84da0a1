package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// imageAsTextCaddyfile serves an image model priced by its images only (0.04 an image, 0.17 at
// 1024x1024 high) that its provider answers as chat ({{up_url}}, as Google's OpenAI-compatible
// endpoint answers gemini-2.5-flash-image), through the README's pass-through site.
const imageAsTextCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider images-as-chat {
			base_url {{up_url}}/v1
			api_key chat-operator-key
			models flash-image
		}
		price flash-image {
			image 0.04
			image 1024x1024 high 0.17
		}
		key mg-image-chat {
			account image-chat
		}
	}
}
` + readmePassThroughSite

// TestImageModelAsTextIsCharged: a chat completion (openai-go) of a model priced by images only
// holds and is charged the images it may make, as one image request of which nothing is known:
// n images (1 when it names none) at the costliest size and quality, 0.17 each, whatever tokens
// the answer reports. Before, it was held as text, at token prices the model does not have:
// nothing was held and nothing charged, the images free.
func TestImageModelAsTextIsCharged(t *testing.T) {
	up := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeFakeJSON(w, 200, map[string]any{"id": "chatcmpl-img", "object": "chat.completion", "created": 1, "model": "flash-image",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant",
				"content": "here it is", "images": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,QUJD"}}}}}},
			"usage": map[string]any{"prompt_tokens": 9, "completion_tokens": 1290, "total_tokens": 1299}})
	}))
	base, g := startSimGateway(t, imageAsTextCaddyfile, map[string]string{"up_url": up.URL})
	keysEnv{g: g, base: base}.credit(t, "image-chat", "10", "image-chat-1")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-image-chat"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		n         int64
		held, end string
	}{{0, "0.17", "settle 0.17"}, {2, "0.34", "settle 0.34"}} {
		params := openai.ChatCompletionNewParams{Model: "flash-image", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("draw a lighthouse")}}
		if c.n > 0 {
			params.N = openai.Int(c.n)
		}
		from := len(ledgerEntries(t, g, "image-chat"))
		if _, err := oa.Chat.Completions.New(ctx, params); err != nil {
			t.Fatal(err)
		}
		if held, end := toolEnded(t, g, "image-chat", from); held != c.held || end != c.end {
			t.Errorf("n %d: held %s, %s; want held %s, %s", c.n, held, end, c.held, c.end)
		}
	}
}
