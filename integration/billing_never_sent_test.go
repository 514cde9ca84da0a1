package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// neverSentCaddyfile prices a chat model served by two providers: one whose upstream
// ({{stalled}}) takes TCP connections and never answers the TLS handshake, so that no request
// ever reaches it, and one ({{slow}}) that reads the whole request and answers late.
const neverSentCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider stalled {
			base_url https://{{stalled}}/v1
			api_key stalled-operator-key
			models chat-stalled
		}
		provider slow {
			base_url {{slow}}/v1
			api_key slow-operator-key
			models chat-slow
		}
		price chat-stalled {
			input_tokens 1
			output_tokens 1000
		}
		price chat-slow {
			input_tokens 1
			output_tokens 1000
		}
		key mg-left {
			account left
		}
	}
}
` + readmePassThroughSite

// startStalledListener takes TCP connections on a loopback port and reads them without ever
// writing: a TLS client's handshake waits there until it gives up.
func startStalledListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				io.Copy(io.Discard, conn) // until the gateway closes it, or the test ends
			})
		}
	})
	return ln.Addr().String()
}

// TestClientLeftBeforeSendingIsReleased: a chat (openai-go) whose client gives up while the
// gateway is still connecting to the provider (a TLS handshake that never ends) reached no
// provider: its hold is released, not settled at its estimate. A chat whose client gives up
// after the provider got the request is still charged its estimate (the provider may bill it).
func TestClientLeftBeforeSendingIsReleased(t *testing.T) {
	slow := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		writeFakeJSON(w, 200, map[string]any{"id": "chatcmpl-late", "object": "chat.completion", "created": 1, "model": "chat-slow",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "late"}}},
			"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
	}))
	base, g := startSimGateway(t, neverSentCaddyfile, map[string]string{"stalled": startStalledListener(t), "slow": slow.URL})
	keys := keysEnv{g: g, base: base}
	keys.credit(t, "left", "10", "left-1")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-left"), option.WithMaxRetries(0))
	ask := func(model string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, MaxTokens: openai.Int(100),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		if err == nil {
			t.Fatalf("%s answered before the client gave up", model)
		}
	}

	ask("chat-stalled")
	if held, end := toolEnded(t, g, "left", 0); held == "" || end != "release" {
		t.Errorf("a chat that never reached its provider: held %q, ended %q; want released", held, end)
	}
	if r := keys.admin(t, "GET", "/mediagw/accounts/left/balance", nil); r.field("balance") != "10" || r.field("held") != "0" {
		t.Errorf("balance after a chat that never reached its provider: %s; want 10, nothing held", r.body)
	}

	from := len(ledgerEntries(t, g, "left"))
	ask("chat-slow")
	if held, end := toolEnded(t, g, "left", from); held == "" || end != "settle "+held {
		t.Errorf("a chat its provider got, left by its client: held %q, ended %q; want settled at the amount held", held, end)
	}
}
