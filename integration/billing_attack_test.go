package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mediagw/mediagw/internal/money"
)

// billingAttackCaddyfile prices an image model (a low 1024x1024 image 0.01, a high one 0.17), a
// chat model and a Claude model (1000 per million tokens each way), each used by a key of its
// own account.
const billingAttackCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{fake_url}}/v1
			api_key atk-operator-key
			models atk-image atk-chat
		}
		provider anthropic {
			base_url {{fake_url}}/anthropic/v1
			api_key atk-anthropic-key
			auth_style x-api-key
			models atk-claude
		}
		provider gemini {
			base_url {{fake_url}}/gemini/v1beta
			api_key atk-gemini-key
			auth_style x-goog-api-key
			models atk-gemini
		}
		price atk-image {
			image 0.04
			image 1024x1024 low 0.01
			image 1024x1024 high 0.17
		}
		price atk-chat {
			input_tokens 1000
			output_tokens 1000
			max_output 20
		}
		price atk-claude {
			input_tokens 1000
			output_tokens 1000
		}
		price atk-gemini {
			input_tokens 1000
			output_tokens 1000
		}
		key mg-atk-image {
			account atk-image
		}
		key mg-atk-chat {
			account atk-chat
		}
		key mg-atk-limits {
			account atk-limits
		}
		key mg-atk-claude {
			account atk-claude
		}
		key mg-atk-gemini {
			account atk-gemini
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		@edits path /v1/images/edits
		mediagw_image_edits @edits
		mediagw_route
		reverse_proxy {{fake_url}}
	}
}
`

// fakeHostileProviders answers as a broken or hostile provider would, in the shapes of the
// providers' references:
//   - image edits: always 3 images (at quality low, 1024x1024), whatever n asked for, as JSON or
//     as a stream of 3 image_edit.completed events;
//   - chat completions: the usage object the user's message names ("usage:<name>"), or, for a
//     stream, one delta per output token the request allows as vLLM reads it (its
//     max_completion_tokens before its max_tokens, a string holding a number as that number),
//     without a usage chunk (no include_usage);
//   - Anthropic messages, streamed: message_start and message_delta reporting 0 output tokens,
//     no content block (the model stopped at once);
//   - Gemini streamGenerateContent: 3 chunks of text, each with the usageMetadata Gemini sends
//     before its last chunk (the prompt's 8 tokens, and a total of 8), then nothing until the
//     client leaves; as events (alt=sse), else as the start of one JSON array.
func fakeHostileProviders(t *testing.T, usages map[string]string) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sse := func() { w.Header().Set("Content-Type", "text/event-stream") }
		w.Header().Set("Content-Type", "application/json")
		stream := strings.Contains(string(body), `"stream":true`)
		switch {
		case r.URL.Path == "/v1/images/edits" && r.Header.Get("Authorization") == "Bearer atk-operator-key":
			if stream {
				sse()
				for range 3 {
					io.WriteString(w, "event: image_edit.completed\ndata: "+`{"type":"image_edit.completed","b64_json":"QUJD","created_at":1,"size":"1024x1024","quality":"low","background":"opaque","output_format":"png",`+
						`"usage":{"total_tokens":100,"input_tokens":50,"output_tokens":50,"input_tokens_details":{"text_tokens":10,"image_tokens":40}}}`+"\n\n")
				}
				return
			}
			io.WriteString(w, `{"created":1,"background":"opaque","data":[{"b64_json":"QUJD"},{"b64_json":"REVG"},{"b64_json":"R0hJ"}],"output_format":"png",`+
				`"quality":"low","size":"1024x1024","usage":{"input_tokens":10,"input_tokens_details":{"image_tokens":0,"text_tokens":10},"output_tokens":544,"total_tokens":554}}`)
		case r.URL.Path == "/v1/chat/completions" && r.Header.Get("Authorization") == "Bearer atk-operator-key":
			var req struct {
				MaxTokens           json.RawMessage            `json:"max_tokens"`
				MaxCompletionTokens json.RawMessage            `json:"max_completion_tokens"`
				Messages            []struct{ Content string } `json:"messages"`
			}
			if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
				http.Error(w, `{"error":{"message":"bad body","type":"invalid_request_error","code":null}}`, http.StatusBadRequest)
				return
			}
			if stream {
				sse()
				// As vLLM reads them: max_completion_tokens first, and a string holding a
				// number is that number (pydantic's lax mode).
				lax := func(raw json.RawMessage) int64 {
					n, _ := strconv.ParseInt(strings.Trim(string(raw), `"`), 10, 64)
					return n
				}
				limit := lax(req.MaxCompletionTokens)
				if limit == 0 {
					limit = lax(req.MaxTokens)
				}
				const chunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"atk-chat","choices":[{"index":0,"delta":{%s},"finish_reason":%s}]}` + "\n\n"
				fmt.Fprintf(w, chunk, `"role":"assistant","content":""`, "null")
				for range min(limit, 1000) {
					fmt.Fprintf(w, chunk, `"content":"w"`, "null")
				}
				fmt.Fprintf(w, chunk, "", `"length"`)
				io.WriteString(w, "data: [DONE]\n\n")
				return
			}
			usage, ok := usages[strings.TrimPrefix(req.Messages[0].Content, "usage:")]
			if !ok {
				usage = `"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}`
			}
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"atk-chat","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]%s}`, usage)
		case r.URL.Path == "/anthropic/v1/messages" && r.Header.Get("X-Api-Key") == "atk-anthropic-key" && stream:
			sse()
			for _, e := range [][2]string{
				{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"atk-claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":0}}}`},
				{"ping", `{"type":"ping"}`},
				{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":0}}`},
				{"message_stop", `{"type":"message_stop"}`},
			} {
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
			}
		case r.URL.Path == "/gemini/v1beta/models/atk-gemini:streamGenerateContent" && r.Header.Get("X-Goog-Api-Key") == "atk-gemini-key":
			const chunk = `{"candidates":[{"content":{"role":"model","parts":[{"text":%q}]},"index":0}],"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"atk-gemini"}`
			if r.URL.Query().Get("alt") != "sse" {
				// Without alt=sse: one JSON array of the chunks.
				io.WriteString(w, "[")
				for _, text := range []string{"The", " quick", " brown"} {
					fmt.Fprintf(w, chunk+",\r\n", text)
				}
			} else {
				sse()
				for _, text := range []string{"The", " quick", " brown"} {
					fmt.Fprintf(w, "data: "+chunk+"\r\n\r\n", text)
				}
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"wrong path or key","type":"invalid_request_error"}}`)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// ledgerEntries reads an account's whole ledger through the admin API, page by page, and checks
// that its balance is the sum of the entries (each entry's balance_after the running sum). It
// returns the entries. A request that ends while the ledger is read changes the balance between
// the reads: the ledger is read again then.
func ledgerEntries(t *testing.T, g *gateway, account string) []map[string]any {
	t.Helper()
	admin := "http://" + g.admin + "/mediagw/accounts/" + account
	for range 50 {
		before := call(t, "GET", admin+"/balance", "", nil).field("balance")
		all, sum := readLedger(t, g, account)
		after := call(t, "GET", admin+"/balance", "", nil).field("balance")
		if before != after {
			continue
		}
		if after != money.Format(sum) {
			t.Fatalf("%s: balance %s, its ledger sums to %s", account, after, money.Format(sum))
		}
		return all
	}
	t.Fatalf("%s: the balance kept changing while its ledger was read", account)
	return nil
}

// endedEntries is the entries of an account's ledger (ledgerEntries) after its first from, once
// one of them ends a hold (a settlement or a release). A request's hold ends after its answer
// has reached the client, and a transient hold's entry is in the ledger only from its end on, so
// a ledger read just after the answer may not have them yet: it is read again, for up to 30 s.
func endedEntries(t *testing.T, g *gateway, account string, from int) []map[string]any {
	t.Helper()
	// Longer than a stream's drain (10 s): a streamed request whose client left ends its hold
	// when the drain does. Polled: a test waits only as long as the hold takes to end.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if all := ledgerEntries(t, g, account); len(all) > from {
			for _, e := range all[from:] {
				if e["kind"] == "settle" || e["kind"] == "release" {
					return all[from:]
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no hold ended in the ledger after its entry %d within 30 s", account, from)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// endsOfHolds is an account's ledger (ledgerEntries) once it holds at least n hold ends
// (settlements and releases). Whoever finishes a task (the watcher or a client's query, on any
// instance) ends its hold just after the task's record shows it finished, so a ledger read as
// soon as a client sees the task end may not have it yet: it is read again, for up to 30 s.
func endsOfHolds(t *testing.T, g *gateway, account string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := ledgerEntries(t, g, account)
		ends := 0
		for _, e := range all {
			if e["kind"] == "settle" || e["kind"] == "release" {
				ends++
			}
		}
		if ends >= n {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d holds ended in the ledger within 30 s, want %d", account, ends, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readLedger reads an account's ledger, checking that each entry's balance_after is the running
// sum of the amounts; it returns the entries and their sum.
func readLedger(t *testing.T, g *gateway, account string) ([]map[string]any, int64) {
	t.Helper()
	admin := "http://" + g.admin + "/mediagw/accounts/" + account
	var all []map[string]any
	var sum int64
	after := ""
	for range 100 {
		page := call(t, "GET", admin+"/ledger?limit=7&after="+after, "", nil)
		if page.status != 200 {
			t.Fatalf("%s's ledger = %d %s", account, page.status, page.body)
		}
		m := page.json(t)
		entries, _ := m["entries"].([]any)
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			amount, err := money.Parse(fmt.Sprint(entry["amount"]))
			if err != nil {
				t.Fatalf("%s: entry %v: %v", account, entry, err)
			}
			sum += amount
			if got := fmt.Sprint(entry["balance_after"]); got != money.Format(sum) {
				t.Fatalf("%s: entry %v has balance_after %s, the running sum is %s", account, entry, got, money.Format(sum))
			}
			all = append(all, entry)
		}
		next, _ := m["next"].(string)
		if next == "" {
			break
		}
		after = next
	}
	return all, sum
}

// TestBillingAttacks runs hostile clients and a hostile provider against one priced gateway, and
// reads what each attack was held and charged in its account's ledger, which must sum to the
// account's balance after every attack:
//   - an image edit asking for n images, answered with more, is charged n (asked 1: 0.01, not
//     0.03; asked 2 of quality auto, held 0.34: 0.02), as JSON or streamed;
//   - a chat that names max_tokens 1 and max_completion_tokens 50 is held, and charged, as the
//     larger: an upstream that reads max_completion_tokens (vLLM) streams 50 tokens, without a
//     usage chunk, and those 50 are charged, not 1; one of max_tokens "50" (a string, which
//     vLLM reads as 50) is held and charged 50, not the model's max_output of 20;
//   - an Anthropic stream that made no output (message_start and message_delta reporting 0
//     output tokens) is charged its 30 input tokens and no output (0.03), through the official
//     @anthropic-ai/sdk;
//   - a Gemini stream the client leaves after 3 chunks of text ("The", " quick", " brown"),
//     before the last chunk that counts the output, is charged its 8 input tokens and 5 output
//     tokens, one per 4 bytes of each chunk's text (0.013), through the official @google/genai,
//     not 0 output tokens (0.008);
//   - the same stream without alt=sse (one JSON array), left after its third chunk, has not
//     reported its output: it is charged its estimate of output, not 0 output tokens; and a
//     generate-content body is held for its input, from its bytes as every JSON body is (it
//     was held 0 input, its model being in the path), and for the output its generationConfig
//     allows (maxOutputTokens "50", a string as protobuf JSON takes it, times candidateCount 2:
//     it was held max_output's 4096);
//   - usage objects that are hostile (negative, fractional, strings, null, huge, past int64) are
//     charged the estimate, never less than nothing, never a credit.
func TestBillingAttacks(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	usages := map[string]string{
		"negative":  `,"usage":{"prompt_tokens":-1000000,"completion_tokens":-5,"total_tokens":-1000005}`,
		"fraction":  `,"usage":{"prompt_tokens":10.5,"completion_tokens":2.5,"total_tokens":13}`,
		"strings":   `,"usage":{"prompt_tokens":"10","completion_tokens":"1","total_tokens":"11"}`,
		"null":      `,"usage":null`,
		"huge":      `,"usage":{"prompt_tokens":1e400,"completion_tokens":1e300,"total_tokens":1e400}`,
		"past-int":  `,"usage":{"prompt_tokens":-9223372036854775809,"completion_tokens":-9223372036854775808,"total_tokens":0}`,
		"none":      ``,
		"array":     `,"usage":[{"prompt_tokens":1,"completion_tokens":1}]`,
		"total-neg": `,"usage":{"prompt_tokens":-9,"total_tokens":-1}`,
	}
	fake := fakeHostileProviders(t, usages)
	base, g := startSimGateway(t, billingAttackCaddyfile, map[string]string{"fake_url": fake.URL})
	keys := keysEnv{g: g, base: base}
	for _, account := range []string{"atk-image", "atk-chat", "atk-limits", "atk-claude", "atk-gemini"} {
		keys.credit(t, account, "100", "attack-"+account)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// settles lists the charged of each settle entry in the account's ledger after the first n.
	settles := func(account string, from int) []string {
		t.Helper()
		var out []string
		for _, e := range endedEntries(t, g, account, from) {
			if e["kind"] == "settle" {
				out = append(out, fmt.Sprint(e["charged"]))
			}
		}
		return out
	}

	t.Run("image edit answered with more images than n", func(t *testing.T) {
		for _, c := range []struct{ body, charged string }{
			{`"n":1,"size":"1024x1024","quality":"low"`, "0.01"},
			{`"n":2,"size":"1024x1024","quality":"auto"`, "0.02"},
			{`"n":1,"size":"1024x1024","quality":"low","stream":true`, "0.01"},
		} {
			from := len(ledgerEntries(t, g, "atk-image"))
			r := call(t, "POST", base+"/v1/images/edits", "mg-atk-image",
				`{"model":"atk-image","prompt":"make it blue","images":[{"image_url":"https://cdn.example.com/cat.png"}],`+c.body+`}`)
			if r.status != 200 {
				t.Fatalf("edit %s = %d %s", c.body, r.status, r.body)
			}
			if got := settles("atk-image", from); len(got) != 1 || got[0] != c.charged {
				t.Errorf("edit %s charged %v; want %s", c.body, got, c.charged)
			}
		}
	})

	oa := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	}
	t.Run("chat naming two output limits", func(t *testing.T) {
		from := len(ledgerEntries(t, g, "atk-limits"))
		client := oa("mg-atk-limits")
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "atk-chat",
			MaxTokens: openai.Int(1), MaxCompletionTokens: openai.Int(50),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("write")}})
		text := ""
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) > 0 {
				text += c.Choices[0].Delta.Content
			}
		}
		if err := stream.Err(); err != nil || len(text) != 50 {
			t.Fatalf("stream: %d tokens, %v; want 50", len(text), err)
		}
		// Input as estimated from the body's bytes, and 50 output tokens at 0.001 each.
		entries := endedEntries(t, g, "atk-limits", from)
		var held, charged int64
		for _, e := range entries {
			switch e["kind"] {
			case "hold":
				held, _ = money.Parse(fmt.Sprint(e["amount"]))
			case "settle":
				charged, _ = money.Parse(fmt.Sprint(e["charged"]))
			}
		}
		if -held-charged != 0 || charged < 50*1000 {
			t.Errorf("held %s, charged %s; want 50 output tokens (0.05) and the input held and charged", money.Format(-held), money.Format(charged))
		}

		// max_tokens "50", a string, which the upstream reads as 50: held and charged 50 output
		// tokens, not the model's max_output of 20.
		from = len(ledgerEntries(t, g, "atk-limits"))
		stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "atk-chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("write")}}, option.WithJSONSet("max_tokens", "50"))
		text = ""
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) > 0 {
				text += c.Choices[0].Delta.Content
			}
		}
		if err := stream.Err(); err != nil || len(text) != 50 {
			t.Fatalf("stream with max_tokens \"50\": %d tokens, %v; want 50", len(text), err)
		}
		entries = endedEntries(t, g, "atk-limits", from)
		held, _ = money.Parse(fmt.Sprint(entries[0]["amount"]))
		charged, _ = money.Parse(fmt.Sprint(entries[1]["charged"]))
		if -held != charged || charged < 50*1000 {
			t.Errorf("max_tokens \"50\": held %s, charged %s; want 50 output tokens (0.05) and the input held and charged", money.Format(-held), money.Format(charged))
		}
	})

	t.Run("anthropic stream without output, gemini stream left midway", func(t *testing.T) {
		dir := nodeSDKs(t)
		cmd := exec.CommandContext(ctx, "node", "billing_attack_check.mjs")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GATEWAY="+base, "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "all ok") {
			t.Fatalf("node billing_attack_check.mjs: %v\n%s", err, out)
		}
		if got := settles("atk-claude", 0); len(got) != 1 || got[0] != "0.03" {
			t.Errorf("an Anthropic stream of 30 input tokens and no output charged %v; want 0.03", got)
		}
		var got []string
		waitFor(t, "the Gemini stream's settlement", func() bool { got = settles("atk-gemini", 0); return len(got) > 0 })
		if len(got) != 1 || got[0] != "0.013" {
			t.Errorf("a Gemini stream left after 3 chunks of text charged %v; want 0.013", got)
		}

		// The JSON array form, read by a client that leaves after its third chunk.
		from := len(ledgerEntries(t, g, "atk-gemini"))
		const body = `{"contents":[{"role":"user","parts":[{"text":"write"}]}],"generationConfig":{"maxOutputTokens":"50","candidateCount":2}}`
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1beta/models/atk-gemini:streamGenerateContent", strings.NewReader(body))
		req.Header.Set("X-Goog-Api-Key", "mg-atk-gemini")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var read []byte
		buf := make([]byte, 4096)
		for n := 0; n < 100 && strings.Count(string(read), `"text"`) < 3; n++ {
			k, err := resp.Body.Read(buf)
			read = append(read, buf[:k]...)
			if err != nil {
				break
			}
		}
		resp.Body.Close() // the client leaves
		if resp.StatusCode != 200 || strings.Count(string(read), `"text"`) != 3 {
			t.Fatalf("JSON stream = %d %s", resp.StatusCode, read)
		}
		var entries []map[string]any
		waitFor(t, "the JSON stream's settlement", func() bool {
			entries = ledgerEntries(t, g, "atk-gemini")
			return len(entries) == from+2 && entries[len(entries)-1]["kind"] == "settle"
		})
		// Held: the body's bytes / 4 as input and 2 candidates of 50 output tokens; charged: the
		// 8 input tokens reported and the output held.
		inputHeld := int64(len(body)+3) / 4 * 1000
		if held, charged := fmt.Sprint(entries[from]["amount"]), fmt.Sprint(entries[from+1]["charged"]); held != "-"+money.Format(inputHeld+100_000) || charged != "0.108" {
			t.Errorf("a JSON stream of Gemini chunks left before its last: held %s, charged %s; want %s and 0.108 (%v)", held, charged, money.Format(inputHeld+100_000), entries[from:])
		}
	})

	t.Run("hostile usage objects", func(t *testing.T) {
		client := oa("mg-atk-chat")
		for name := range usages {
			from := len(ledgerEntries(t, g, "atk-chat"))
			// The client may refuse the answer (a usage it cannot decode): what it was charged is
			// what this checks.
			_, _ = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "atk-chat", MaxTokens: openai.Int(10),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("usage:" + name)}})
			entries := endedEntries(t, g, "atk-chat", from)
			if len(entries) != 2 || entries[0]["kind"] != "hold" || entries[1]["kind"] != "settle" {
				t.Fatalf("usage %s: entries %v; want a hold and its settlement", name, entries)
			}
			held := strings.TrimPrefix(fmt.Sprint(entries[0]["amount"]), "-")
			if got := fmt.Sprint(entries[1]["charged"]); got != held {
				t.Errorf("usage %s: charged %s; want the estimate held, %s", name, got, held)
			}
		}
	})

	// After the attacks: nothing held, no balance above the credit, and the usage report's
	// amount is what the ledger's settlements charged. The report spans the day before to the
	// day after, so a run across midnight UTC reads the same sum.
	from, to := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	for _, account := range []string{"atk-image", "atk-chat", "atk-limits", "atk-claude", "atk-gemini"} {
		admin := "http://" + g.admin + "/mediagw/accounts/" + account
		if b := call(t, "GET", admin+"/balance", "", nil); b.field("held") != "0" {
			t.Errorf("%s holds %s after its attacks", account, b.field("held"))
		}
		entries := ledgerEntries(t, g, account)
		balance, _ := money.Parse(fmt.Sprint(entries[len(entries)-1]["balance_after"]))
		if balance > 100*money.Unit {
			t.Errorf("%s: balance %s after its attacks, more than its credit of 100", account, money.Format(balance))
		}
		var charged int64
		for _, e := range entries {
			if e["kind"] == "settle" {
				n, _ := money.Parse(fmt.Sprint(e["charged"]))
				charged += n
			}
		}
		if charged == 0 {
			continue // a run of one subtest: nothing charged, nothing reported
		}
		waitFor(t, account+"'s usage report", func() bool {
			r := call(t, "GET", "http://"+g.admin+"/mediagw/usage?group_by=account&account="+account+"&from="+from+"&to="+to, "", nil)
			rows, _ := r.json(t)["rows"].([]any)
			if len(rows) != 1 {
				return false
			}
			row, _ := rows[0].(map[string]any)
			return row["amount"] == money.Format(charged)
		})
	}
}
