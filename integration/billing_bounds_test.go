package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// boundsCaddyfile prices bound-chat at one unit per output token, for a limited account
// (credited in the test) and an unlimited one.
const boundsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models bound-chat
		}
		price bound-chat {
			output_tokens 1000000
		}
		key mg-bound-limited {
			account bounded
		}
		key mg-bound-unlimited {
			account metered
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {{up_host}} {
			header_up Host {upstream_hostport}
		}
	}
}
`

// fakeOpenAIReportedUsage answers chat completions as OpenAI's reference shows, with the usage
// object the user's message names: "usage:<name>" picks one of usages.
func fakeOpenAIReportedUsage(t *testing.T, usages map[string]string) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not here","type":"invalid_request_error","code":null}}`, http.StatusNotFound)
			return
		}
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad body","type":"invalid_request_error","code":null}}`, http.StatusBadRequest)
			return
		}
		usage, ok := usages[strings.TrimPrefix(req.Messages[0].Content, "usage:")]
		if !ok {
			usage = `{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bound-chat","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":%s}`, usage)
	}))
	t.Cleanup(up.Close)
	return up
}

// TestBillingPastTheLedgersBound: amounts past the most one ledger entry holds
// (9007199254.740991) are bounded, not failed. A chat whose max_tokens asks for more is a 402 on
// a limited account and an unlimited one alike (both were 500: the hold was refused by the
// store); an answer whose usage prices past the bound is charged the bound (its hold used
// to stay open, the request free once the reconciler released it); an answer reporting a
// negative output count is charged the estimate (max_tokens), not 0.
func TestBillingPastTheLedgersBound(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	up := fakeOpenAIReportedUsage(t, map[string]string{
		"negative": `{"prompt_tokens":9,"completion_tokens":-5}`,
		"huge":     `{"prompt_tokens":9,"completion_tokens":9223372036854775807,"total_tokens":9223372036854775807}`,
	})
	base, g := startSimGateway(t, boundsCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	env := keysEnv{g: g}
	if r := env.adminMoney(t, "POST", "/mediagw/accounts/bounded/credit", `{"amount":"1000"}`,
		map[string]string{"Idempotency-Key": "bounds-1", "Content-Type": "application/json"}); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	chat := func(key, maxTokens, say string) response {
		t.Helper()
		return call(t, "POST", base+"/v1/chat/completions", key,
			`{"model":"bound-chat","max_tokens":`+maxTokens+`,"messages":[{"role":"user","content":"`+say+`"}]}`)
	}
	settled := func(account, balance string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			b := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/"+account+"/balance", "", nil)
			if b.field("balance") == balance && b.field("held") == "0" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s, want a balance of %s and nothing held", account, b.body, balance)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	for _, maxTokens := range []string{"9007199255", "9223372036854775807"} {
		if r := chat("mg-bound-limited", maxTokens, "hi"); r.status != 402 || !strings.Contains(string(r.body), "insufficient_quota") {
			t.Fatalf("max_tokens %s on a limited account = %d %s, want 402 insufficient_quota", maxTokens, r.status, r.body)
		}
		if r := chat("mg-bound-unlimited", maxTokens, "hi"); r.status != 402 || !strings.Contains(string(r.body), "past the most one request may hold") {
			t.Fatalf("max_tokens %s on an unlimited account = %d %s, want 402 saying the bound", maxTokens, r.status, r.body)
		}
	}
	if r := chat("mg-bound-unlimited", "10", "hi"); r.status != 200 {
		t.Fatalf("a chat within the bound on an unlimited account = %d %s", r.status, r.body)
	}
	settled("metered", "-1") // one output token
	settled("bounded", "1000")

	if r := chat("mg-bound-limited", "10", "usage:negative"); r.status != 200 {
		t.Fatalf("a chat reporting -5 output tokens = %d %s", r.status, r.body)
	}
	settled("bounded", "990") // charged its max_tokens, as an answer without an output count

	if r := chat("mg-bound-limited", "10", "usage:huge"); r.status != 200 {
		t.Fatalf("a chat reporting 2^63-1 output tokens = %d %s", r.status, r.body)
	}
	settled("bounded", "-9007198264.740991") // 990 less the bound

	var page struct {
		Entries []struct{ Kind, Charged, Note string } `json:"entries"`
	}
	decodeJSON(t, call(t, "GET", "http://"+g.admin+"/mediagw/accounts/bounded/ledger", "", nil).body, &page)
	last := page.Entries[len(page.Entries)-1]
	if last.Kind != "settle" || last.Charged != "9007199254.740991" || !strings.Contains(last.Note, "over the hold") {
		t.Fatalf("the last entry = %+v, want the settlement charging the bound, over the hold", last)
	}
}
