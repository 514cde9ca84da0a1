package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// h2cChatCaddyfile: a priced chat model whose upstream speaks HTTP/2 without TLS only.
const h2cChatCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider h2 {
			base_url {{h2}}/v1
			api_key h2-key
			models chat-h2
		}
		price chat-h2 {
			input_tokens 1
			output_tokens 1000
		}
		key mg-h2 {
			account h2
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw {
				versions h2c
			}
		}
	}
}
`

// TestH2CLeftAfterSendingIsCharged: over HTTP/2 (h2c), a chat the provider got whose
// client leaves before the answer is charged (the provider may bill it), not released as never
// sent.
func TestH2CLeftAfterSendingIsCharged(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "h2c only", 505)
			return
		}
		io.Copy(io.Discard, r.Body)
		got.Add(1)
		<-r.Context().Done()
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	base, g := startSimGateway(t, h2cChatCaddyfile, map[string]string{"h2": srv.URL})
	keys := keysEnv{g: g, base: base}
	keys.credit(t, "h2", "10", "h2-1")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-h2"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "chat-h2", MaxTokens: openai.Int(100),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err == nil || got.Load() != 1 {
		t.Fatalf("err %v, provider got %d; want the provider to get it and the client to give up", err, got.Load())
	}
	time.Sleep(300 * time.Millisecond)
	if held, end := toolEnded(t, g, "h2", 0); held == "" || !strings.HasPrefix(end, "settle") {
		t.Errorf("a chat its HTTP/2 provider got, left by its client: held %q, ended %q; want settled", held, end)
	}
}
