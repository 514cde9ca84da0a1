package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/mediagw/mediagw/internal/money"
)

// TestReviewAnthropicCacheReadsAreChargedAtTheirRate: Anthropic's published pricing bills a
// prompt cache read (cache_read_input_tokens) at 0.1 × its base input price, as the branch now
// bills writes at 1.25 × and 2 ×. p-claude is priced 1000 a million input tokens, 2000 output;
// an answer of 10 input tokens, 1000 read from the cache and 4 output tokens is billed
// 10 × 1000 + 1000 × 100 + 4 × 2000 per million = 0.118. The gateway charges the reads at the
// full input price: 1.018, more than eight times what the provider bills.
func TestReviewAnthropicCacheReadsAreChargedAtTheirRate(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"p-claude",`+
			`"content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,`+
			`"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":1000,"output_tokens":4}}`)
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": filepath.Join(t.TempDir(), "usage.log")})
	body := map[string]any{"model": "p-claude", "max_tokens": 100,
		"system":   []any{map[string]any{"type": "text", "text": "a long shared context", "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	if r := call(t, "POST", base+"/v1/messages", "mg-count", body); r.status != 200 {
		t.Fatalf("messages = %d %s", r.status, r.body)
	}
	if got := settledSince(t, g, "count", 0); got != 118_000 {
		t.Errorf("a message that read 1000 tokens from the cache was charged %s, want 0.118 (reads at 0.1 × input)", money.Format(got))
	}
}
