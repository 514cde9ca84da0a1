package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeOpenAIUsage answers chat completions (not streamed) as OpenAI's reference shows, with a
// usage object that says what the user's message asks: "missing" leaves completion_tokens (and
// total_tokens) out, "zero" reports 0 completion tokens.
func fakeOpenAIUsage(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not here","type":"invalid_request_error","code":null}}`, http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		usage := `{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}`
		if strings.Contains(string(body), "missing") {
			usage = `{"prompt_tokens":9}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"cut-chat","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}],"usage":%s}`, usage)
	}))
	t.Cleanup(up.Close)
	return up
}

// TestPassThroughUsageWithoutOutputCount: an answer whose usage object has no output count has
// not reported 0 output tokens: it is charged its hold's output part (max_tokens 200 at 1000 per
// million: 0.2); an answer that reports 0 completion tokens is charged 0.
func TestPassThroughUsageWithoutOutputCount(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	up := fakeOpenAIUsage(t)
	base, g := startSimGateway(t, streamCutCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	admin := "http://" + g.admin + "/mediagw/accounts/streamers"
	keysEnv{g: g}.credit(t, "streamers", "1", "usage-output-1")
	for _, c := range []struct{ say, balance string }{{"missing", "0.8"}, {"zero", "0.8"}} {
		from := len(ledgerEntries(t, g, "streamers"))
		r := call(t, "POST", base+"/v1/chat/completions", "mg-stream-cut",
			`{"model":"cut-chat","max_tokens":200,"messages":[{"role":"user","content":"`+c.say+`"}]}`)
		if r.status != 200 || !strings.Contains(string(r.body), `"usage"`) {
			t.Fatalf("chat %s = %d %s", c.say, r.status, r.body)
		}
		// The chat is settled once its answer is sent. A request's hold on Badger is not in
		// held before it ends (docs/billing.md), so the ledger is read until the hold's end.
		endedEntries(t, g, "streamers", from)
		if b := call(t, "GET", admin+"/balance", "", nil); b.field("balance") != c.balance || b.field("held") != "0" {
			t.Fatalf("after the %s chat: %s, want a balance of %s and nothing held", c.say, b.body, c.balance)
		}
	}
}
