package integration

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// failoverNeverSentCaddyfile: one priced chat model on two upstreams of one provider: "busy"
// (tried first) answers every request 429, "stalled" takes TCP connections and never answers
// the TLS handshake.
const failoverNeverSentCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider chat {
			models chat-fo
			upstream busy {
				base_url {{busy}}/v1
				api_key busy-key
				priority 1
			}
			upstream stalled {
				base_url https://{{stalled}}/v1
				api_key stalled-key
				priority 2
			}
		}
		price chat-fo {
			input_tokens 1
			output_tokens 1000
		}
		key mg-fo {
			account fo
		}
	}
}
` + readmePassThroughSite

// TestRefusedThenNeverSentIsReleased: the first upstream refuses the chat with 429
// (it made nothing), the gateway fails over to a second whose TLS handshake never ends, and the
// client gives up meanwhile. No provider made anything: issue #24 "So does a request that the
// upstream refuses" (released), docs/billing.md "so is one that never reached a provider: the
// client left (or every upstream failed) before the request's headers were written". The
// refused first attempt does not count as sent: the chat is released, not charged its estimate.
func TestRefusedThenNeverSentIsReleased(t *testing.T) {
	var refused atomic.Int64
	busy := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refused.Add(1)
		writeFakeJSON(w, 429, map[string]any{"error": map[string]any{"message": "rate limited", "type": "requests", "code": "rate_limit_exceeded"}})
	}))
	base, g := startSimGateway(t, failoverNeverSentCaddyfile, map[string]string{"busy": busy.URL, "stalled": startStalledListener(t)})
	keys := keysEnv{g: g, base: base}
	keys.credit(t, "fo", "10", "fo-1")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-fo"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "chat-fo", MaxTokens: openai.Int(100),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err == nil {
		t.Fatal("answered before the client gave up")
	}
	if refused.Load() != 1 {
		t.Fatalf("the busy upstream got %d requests; want 1 (refused, then failed over)", refused.Load())
	}
	time.Sleep(300 * time.Millisecond)
	if held, end := toolEnded(t, g, "fo", 0); held == "" || end != "release" {
		t.Errorf("a chat refused by one upstream and never sent to the other: held %q, ended %q; want released", held, end)
	}
	if r := keys.admin(t, "GET", "/mediagw/accounts/fo/balance", nil); r.field("balance") != "10" {
		t.Errorf("balance: %s; want 10", r.body)
	}
}
