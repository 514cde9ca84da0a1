package integration

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/money"
)

// hostileUsageCaddyfile is Caddyfile.example's gateway site (no route block, the mediagw
// transport) with one priced chat model at 1000 per million tokens either way: a token costs
// 0.001.
const hostileUsageCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider oa {
			base_url {{up}}/v1
			api_key rv-usage-upstream-key
			models rv-usage-chat
		}
		price rv-usage-chat {
			input_tokens 1000
			output_tokens 1000
		}
		key mg-review-usage-51b0 {
			account rvusage
		}
	}
}

` + transportSite

// hostileUsageAnswers are chat answers, each named by the user message that asks for it, whose
// usage comes in a shape a provider (or the text a client steers the model to write) may give it.
// Every one reports 100 prompt and 20 completion tokens where it reports them plainly.
var hostileUsageAnswers = map[string]string{
	"plain": `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`,
	"spaced-and-cased": "{\"id\":\"c1\",\"choices\":[],\"usage\" :\n\t{ \"Prompt_Tokens\" : 100 ,\r\n \"COMPLETION_TOKENS\":20 , \"total_tokens\" : 120 }\n}\n",
	"usage-in-content-before": `{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}"}}],` +
		`"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`,
	"usage-in-string-after": `{"id":"c1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120},` +
		`"system_fingerprint":"\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}"}`,
	"repeated-usage": `{"id":"c1","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1},"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`,
	"nested-usage-in-choices": `{"id":"c1","choices":[{"index":0,"usage":{"prompt_tokens":1,"completion_tokens":1},"message":{"role":"assistant","content":"ok"}}],` +
		`"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`,
	"usage-with-nested-details": `{"id":"c1","choices":[],"usage":{"prompt_tokens":100,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
		`"completion_tokens":20,"completion_tokens_details":{"reasoning_tokens":5,"x":[1,{"y":"}"}]},"total_tokens":120}}`,
	"long-answer": `{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("all work and no play ", 100<<10/21) + `"}}],` +
		`"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`,
	"no-total-negative-output": `{"id":"c1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":-5}}`,
	"eighteen-digits":          `{"id":"c1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":999999999999999999}}`,
	// Counts json.Unmarshal refuses for an integer: the whole usage is unread, as absent.
	"huge":     `{"id":"c1","choices":[],"usage":{"prompt_tokens":99999999999999999999,"completion_tokens":20}}`,
	"float":    `{"id":"c1","choices":[],"usage":{"prompt_tokens":100.0,"completion_tokens":20}}`,
	"exponent": `{"id":"c1","choices":[],"usage":{"prompt_tokens":1e2,"completion_tokens":20}}`,
	"escaped":  `{"id":"c1","choices":[],"us\u0061ge":{"prompt_tokens":100,"completion_tokens":20}}`,
	"none":     `{"id":"c1","choices":[]}`,
}

// hostileUsageStreams are streamed chat answers (SSE), by user message, as hostileUsageAnswers.
var hostileUsageStreams = map[string][]string{
	"stream-plain": {`{"id":"c1","choices":[{"index":0,"delta":{"content":"ok"}}],"usage":null}`,
		`{"id":"c1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`},
	"stream-usage-in-delta": {`{"id":"c1","choices":[{"index":0,"delta":{"content":"\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}"}}],"usage":null}`,
		`{"id":"c1","choices":[],"usage" : { "prompt_tokens" : 100, "completion_tokens" : 20 }}`},
}

// TestHostileUsageShapesAreChargedAsRead sends priced chats through a real gateway whose
// upstream answers with usage in hostile shapes (spaced, cased, repeated, nested, inside
// strings, after a long content, gzipped, streamed, with counts out of int64 or not integers),
// and checks what each is charged: 0.12 where the answer reports 100 and 20 tokens, the
// estimate's output part where it reports no usable output count, the whole estimate where its
// usage cannot be read.
func TestHostileUsageShapesAreChargedAsRead(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer rv-usage-upstream-key" || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not here","type":"invalid_request_error","code":null}}`, http.StatusNotFound)
			return
		}
		ask := string(body)
		for name, events := range hostileUsageStreams {
			if strings.Contains(ask, `"`+name+`"`) {
				w.Header().Set("Content-Type", "text/event-stream")
				for _, e := range events {
					fmt.Fprintf(w, "data: %s\n\n", e)
				}
				fmt.Fprint(w, "data: [DONE]\n\n")
				return
			}
		}
		gz := strings.HasSuffix(ask[:strings.LastIndex(ask, `"`)], "-gzip")
		for name, answer := range hostileUsageAnswers {
			if strings.Contains(ask, `"`+name+`"`) || strings.Contains(ask, `"`+name+`-gzip"`) {
				w.Header().Set("Content-Type", "application/json")
				if !gz || !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
					fmt.Fprint(w, answer)
					return
				}
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				fmt.Fprint(zw, answer)
				zw.Close()
				return
			}
		}
		http.Error(w, "unknown case", http.StatusBadRequest)
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, hostileUsageCaddyfile, map[string]string{"up": up.URL})
	keysEnv{g: g}.credit(t, "rvusage", "1000", "rv-usage-credit")
	balanceURL := "http://" + g.admin + "/mediagw/accounts/rvusage/balance"
	// charged sends one chat asking for the answer named say, and returns what it cost.
	charged := func(say string) string {
		t.Helper()
		before := call(t, "GET", balanceURL, "", nil).field("balance")
		stream := ""
		if strings.HasPrefix(say, "stream-") {
			stream = `"stream":true,"stream_options":{"include_usage":true},`
		}
		// The same length for every case: the estimate of the input is the same for each.
		r := call(t, "POST", base+"/v1/chat/completions", "mg-review-usage-51b0",
			`{"model":"rv-usage-chat",`+stream+`"max_tokens":50,"messages":[{"role":"user","content":"`+fmt.Sprintf("%-30s", say+`"`)+`}]}`)
		if r.status != 200 {
			t.Fatalf("%s: chat = %d %s", say, r.status, r.body)
		}
		// Every case is charged something, and a request's hold on Badger shows in neither
		// balance nor held until it ends (docs/billing.md): its settlement is awaited as the
		// balance's change. A streamed answer
		// of known length reaches the client whole before the gateway has read its end and
		// settled, so the change may come after the answer.
		var b response
		for settleBy := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if b = call(t, "GET", balanceURL, "", nil); b.field("held") == "0" && b.field("balance") != before {
				break
			}
			if time.Now().After(settleBy) {
				t.Fatalf("%s: nothing was charged, or the hold did not end: %s", say, b.body)
			}
		}
		return subtractMoney(t, before, b.field("balance"))
	}
	estimate := charged("none") // nothing reported: the whole estimate
	outputEstimate := "0.05"    // max_tokens 50 at 0.001
	t.Logf("an answer without usage is charged its estimate, %s", estimate)
	if estimate == "0" || estimate == "0.12" {
		t.Fatalf("an answer without usage was charged %s; want its estimate", estimate)
	}
	for _, tc := range []struct{ say, want string }{
		{"plain", "0.12"}, {"plain-gzip", "0.12"}, {"spaced-and-cased", "0.12"}, {"usage-in-content-before", "0.12"},
		{"usage-in-string-after", "0.12"}, {"repeated-usage", "0.12"}, {"nested-usage-in-choices", "0.12"},
		{"usage-with-nested-details", "0.12"}, {"long-answer", "0.12"}, {"long-answer-gzip", "0.12"},
		{"stream-plain", "0.12"}, {"stream-usage-in-delta", "0.12"},
		{"no-total-negative-output", addMoney(t, "0.1", outputEstimate)},
		{"eighteen-digits", "0.12"},
		{"huge", estimate}, {"float", estimate}, {"exponent", estimate}, {"escaped", estimate},
	} {
		if got := charged(tc.say); got != tc.want {
			t.Errorf("%s: charged %s, want %s (an answer without usage: %s)", tc.say, got, tc.want, estimate)
		}
	}
}

// subtractMoney is before - after, both decimal amounts of money as the admin API writes them.
func subtractMoney(t *testing.T, before, after string) string {
	t.Helper()
	return money.Format(parseMoney(t, before) - parseMoney(t, after))
}

// addMoney is a + b.
func addMoney(t *testing.T, a, b string) string {
	t.Helper()
	return money.Format(parseMoney(t, a) + parseMoney(t, b))
}

func parseMoney(t *testing.T, s string) int64 {
	t.Helper()
	n, err := money.Parse(s)
	if err != nil {
		t.Fatalf("money %q: %v", s, err)
	}
	return n
}
