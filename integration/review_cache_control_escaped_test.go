package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/money"
)

// TestReviewEscapedCacheControlIsHeldAtTheWriteRate: JSON lets a member name be written with
// escapes ("cache\u005fcontrol" is "cache_control"), and Anthropic's JSON parser reads it as
// cache_control: the prompt is written to the cache and billed at the write rate. The hold must
// be at that rate too, whatever the spelling, or a client takes its account below zero by the
// difference on each request in flight.
func TestReviewEscapedCacheControlIsHeldAtTheWriteRate(t *testing.T) {
	var sent atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sent.Store(int64(len(b)))
		var body struct {
			System []struct {
				CacheControl *struct{ TTL string } `json:"cache_control"`
			} `json:"system"`
		}
		writes := 0
		if json.Unmarshal(b, &body) == nil && len(body.System) > 0 && body.System[0].CacheControl != nil {
			writes = 4000 // the decoder read the escaped name as cache_control: the prompt is written
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"p-claude",`+
			`"content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,`+
			`"usage":{"input_tokens":10,"cache_creation_input_tokens":`+itoa(writes)+`,"cache_read_input_tokens":0,`+
			`"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":`+itoa(writes)+`},"output_tokens":4}}`)
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": filepath.Join(t.TempDir(), "usage.log")})
	body := `{"model":"p-claude","max_tokens":100,"system":[{"type":"text","text":"a long shared context",` +
		`"cache\u005fcontrol":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":"hi"}]}`
	if r := call(t, "POST", base+"/v1/messages", "mg-count", body); r.status != 200 {
		t.Fatalf("messages = %d %s", r.status, r.body)
	}
	want := money.Format(billing.TokensOf(sent.Load())*2000 + 100*2000)
	held, end := toolEnded(t, g, "count", 0)
	if held != want {
		t.Errorf("a message with an escaped cache_control of %d bytes was held %s and ended %q; want held %s (its input at the 1-hour cache write rate)", sent.Load(), held, end, want)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
