package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// failoverGlobals: one priced chat model on two upstreams of one provider: "first" (tried
// first; a test's fake) and "stalled", which takes TCP connections and never answers the TLS
// handshake.
const failoverGlobals = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider chat {
			models chat-fo
			upstream first {
				base_url {{first}}/v1
				api_key first-key
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
`

// failoverNeverSentCaddyfile serves failoverGlobals as the README's pass-through.
const failoverNeverSentCaddyfile = failoverGlobals + readmePassThroughSite

// chatUntilGivenUp sends a chat of chat-fo from a client that gives up after wait.
func chatUntilGivenUp(t *testing.T, base string, wait time.Duration) error {
	t.Helper()
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-fo"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "chat-fo", MaxTokens: openai.Int(100),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	return err
}

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
	base, g := startSimGateway(t, failoverNeverSentCaddyfile, map[string]string{"first": busy.URL, "stalled": startStalledListener(t)})
	keys := keysEnv{g: g, base: base}
	keys.credit(t, "fo", "10", "fo-1")
	// The client gives up after 3 s: long enough for a loaded machine to have sent the chat to
	// the first upstream, and well before the second's TLS handshake times out (10 s).
	if err := chatUntilGivenUp(t, base, 3*time.Second); err == nil {
		t.Fatal("answered before the client gave up")
	}
	if refused.Load() != 1 {
		t.Fatalf("the busy upstream got %d requests; want 1 (refused, then failed over)", refused.Load())
	}
	if held, end := toolEnded(t, g, "fo", 0); held == "" || end != "release" {
		t.Errorf("a chat refused by one upstream and never sent to the other: held %q, ended %q; want released", held, end)
	}
	if r := keys.admin(t, "GET", "/mediagw/accounts/fo/balance", nil); r.field("balance") != "10" {
		t.Errorf("balance: %s; want 10", r.body)
	}
}

// timedOutFailoverCaddyfile serves failoverGlobals with a transport that waits 200ms for an
// answer's headers before it tries the next upstream.
const timedOutFailoverCaddyfile = failoverGlobals + `
http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw {
				response_header_timeout 200ms
			}
			lb_policy first
			lb_retries 2
		}
	}
}
`

// TestTimedOutThenNeverSentIsCharged: the first upstream gets the chat and does not answer in
// time, the gateway fails over to a second whose TLS handshake never ends, and the client gives
// up meanwhile. The first provider had the request and may have made (and billed) it: unlike a
// refusal, an attempt written and then timed out counts as sent, and the chat is charged.
func TestTimedOutThenNeverSentIsCharged(t *testing.T) {
	var got atomic.Int64
	slow := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		select { // past the gateway's wait and the client's
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	base, g := startSimGateway(t, timedOutFailoverCaddyfile, map[string]string{"first": slow.URL, "stalled": startStalledListener(t)})
	keys := keysEnv{g: g, base: base}
	keys.credit(t, "fo", "10", "fo-1")
	// 3 s: time for a loaded machine to send the chat to the first upstream and wait its 200 ms.
	if err := chatUntilGivenUp(t, base, 3*time.Second); err == nil {
		t.Fatal("answered before the client gave up")
	}
	if got.Load() != 1 {
		t.Fatalf("the slow upstream got %d requests; want 1 (timed out, then failed over)", got.Load())
	}
	if held, end := toolEnded(t, g, "fo", 0); held == "" || !strings.HasPrefix(end, "settle") {
		t.Errorf("a chat the first upstream got and did not answer in time, never sent to the other: held %q, ended %q; want settled", held, end)
	}
}

// TestBadGatewayThenNeverSentIsReleased: the first upstream answers the chat 502, the gateway
// fails over to a second whose TLS handshake never ends, and the client gives up meanwhile. A
// 502 is a refusal, as a 429 or a 503 is: the attempt does not count as sent, and the chat is
// released, as it is when its client waits for the next upstream's refusal
// (TestReviewBadGatewayThenRefusedIsReleasedAsWhenTheClientLeft).
func TestBadGatewayThenNeverSentIsReleased(t *testing.T) {
	var got atomic.Int64
	relay := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		writeFakeJSON(w, 502, map[string]any{"error": map[string]any{"message": "upstream connect error", "type": "server_error"}})
	}))
	base, g := startSimGateway(t, failoverNeverSentCaddyfile, map[string]string{"first": relay.URL, "stalled": startStalledListener(t)})
	keys := keysEnv{g: g, base: base}
	keys.credit(t, "fo", "10", "fo-1")
	if err := chatUntilGivenUp(t, base, 700*time.Millisecond); err == nil {
		t.Fatal("answered before the client gave up")
	}
	if got.Load() != 1 {
		t.Fatalf("the relay got %d requests; want 1 (answered 502, then failed over)", got.Load())
	}
	held, end := "", ""
	for deadline := time.Now().Add(10 * time.Second); end == "" && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		held, end = toolEnded(t, g, "fo", 0)
	}
	if held == "" || end != "release" {
		t.Errorf("a chat answered 502 by a relay and never sent to the other upstream: held %q, ended %q; want released", held, end)
	}
}
