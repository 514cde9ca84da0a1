package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/money"
)

// TestAnthropicCacheWritesAreChargedAtTheirRates: Anthropic bills a prompt cache write at 1.25
// times its base input price for a 5-minute cache and 2 times for a 1-hour one, and reports the
// writes in cache_creation_input_tokens, split by TTL in cache_creation (its Messages
// reference). p-claude is priced 1000 a million input tokens and 2000 output, without cache
// write prices: the defaults, Anthropic's rates, apply. The answer reports 10 input tokens, 990
// written for 5 minutes, 3000 for 1 hour and 4 output tokens: 0.01 + 1.2375 + 6 + 0.008 =
// 7.2555. Before, every write was charged at the input price: 4.008. A body that marks a cache
// point (cache_control) is held its input at the 1-hour write rate (2000 a million), since any
// of it may be written so: the hold covers the charge.
func TestAnthropicCacheWritesAreChargedAtTheirRates(t *testing.T) {
	var sent atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/an/v1/messages" || r.Header.Get("X-Api-Key") != "an-upstream-key" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		sent.Store(n)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"p-claude",`+
			`"content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,`+
			`"usage":{"input_tokens":10,"cache_creation_input_tokens":3990,"cache_read_input_tokens":0,`+
			`"cache_creation":{"ephemeral_5m_input_tokens":990,"ephemeral_1h_input_tokens":3000},"output_tokens":4,"service_tier":"standard"}}`)
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": filepath.Join(t.TempDir(), "usage.log")})
	body := map[string]any{"model": "p-claude", "max_tokens": 100,
		"system":   []any{map[string]any{"type": "text", "text": "a long shared context", "cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}}},
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	if r := call(t, "POST", base+"/v1/messages", "mg-count", body); r.status != 200 {
		t.Fatalf("messages = %d %s", r.status, r.body)
	}
	if got := settledSince(t, g, "count", 0); got != 7_255_500 {
		t.Errorf("a message that wrote 990 tokens to a 5-minute cache and 3000 to a 1-hour one was charged %s, want 7.2555", money.Format(got))
	}
	// Held: the body's tokens at 2000 a million (the 1-hour write rate), and 100 output tokens.
	want := money.Format(billing.TokensOf(sent.Load())*2000 + 100*2000)
	if held, _ := toolEnded(t, g, "count", 0); held != want {
		t.Errorf("a message with cache_control of %d bytes was held %s; want %s (its input at the 1-hour cache write rate)", sent.Load(), held, want)
	}
}
