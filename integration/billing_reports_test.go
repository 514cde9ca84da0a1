package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const billingReportsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{fake_url}}/v1
			api_key openai-operator-key
			models gap-chat gap-image
		}
		provider anthropic {
			base_url {{fake_url}}/anthropic/v1
			api_key anthropic-upstream-key
			auth_style x-api-key
			models gap-claude
		}
		provider gemini {
			base_url {{fake_url}}/gemini/v1beta
			api_key gemini-upstream-key
			auth_style x-goog-api-key
			models gap-gemini
		}
		price gap-chat {
			input_tokens 1000
			output_tokens 1000
		}
		price gap-gemini {
			input_tokens 1000
			output_tokens 2000
		}
		price gap-claude {
			input_tokens 1000
			output_tokens 2000
		}
		price gap-image {
			image 0.04
			image 1024x1024 low 0.01
			image 1024x1024 high 0.17
		}
		key mg-gap-gemini {
			account gap-gemini
		}
		key mg-gap-claude {
			account gap-claude
		}
		key mg-gap-errors {
			account gap-errors
		}
		key mg-gap-cr {
			account gap-cr
		}
		key mg-gap-image {
			account gap-image
		}
		key mg-gap-late {
			account gap-late
		}
		key mg-gap-image-stream {
			account gap-image-stream
		}
		key mg-gap-edit-stream {
			account gap-edit-stream
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

// fakeBillingProviders answers as the providers' references show, for their own keys only:
//   - Gemini generateContent and streamGenerateContent?alt=sse (lines ending CRLF), whose
//     usageMetadata has a toolUsePromptTokenCount (tool results given to the model as input) and
//     thoughtsTokenCount, outside promptTokenCount and candidatesTokenCount, in totalTokenCount;
//   - Anthropic messages, streamed or not, whose usage reports 3 web searches (server_tool_use);
//   - OpenAI chat completions: the user's message "error-json" gets 200 and only an error
//     object, "error-stream" a stream of one error event, "cr-stream" a stream of 3 deltas and a
//     usage chunk whose lines end with a bare CR;
//   - OpenAI Responses streams (events as its streaming reference shows them) that fail: with
//     only an error event or response.failed, after the opening response.created and
//     response.in_progress, or after an output item and a delta ("output-failed");
//   - OpenAI image generations: as many images as asked, at quality low, with the quality and
//     size reported at the top level, as gpt-image answers do; streamed (stream: true, events as
//     the image streaming reference shows them), a partial image then the completed one at
//     quality low, or only an error, or a partial image then an error;
//   - OpenAI image edits, streamed: a partial image, then the completed one at quality medium.
func fakeBillingProviders(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	responses := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock() // one request at a time: responses counts them
		defer mu.Unlock()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sse := func() { w.Header().Set("Content-Type", "text/event-stream") }
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/gemini/v1beta/models/gap-gemini:") && r.Header.Get("X-Goog-Api-Key") == "gemini-upstream-key":
			const usage = `"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"toolUsePromptTokenCount":200,"thoughtsTokenCount":20,"totalTokenCount":235}`
			const chunk = `{"candidates":[{"content":{"role":"model","parts":[{"text":%q}]},"index":0%s}],%s,"modelVersion":"gap-gemini"}`
			switch strings.TrimPrefix(r.URL.Path, "/gemini/v1beta/models/gap-gemini:") {
			case "generateContent":
				fmt.Fprintf(w, chunk, "found it", `,"finishReason":"STOP"`, usage)
			case "streamGenerateContent":
				sse()
				fmt.Fprintf(w, "data: "+chunk+"\r\n\r\n", "found ", "", `"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10}`)
				fmt.Fprintf(w, "data: "+chunk+"\r\n\r\n", "it", `,"finishReason":"STOP"`, usage)
			default:
				http.NotFound(w, r)
			}
		case r.URL.Path == "/anthropic/v1/messages" && r.Header.Get("X-Api-Key") == "anthropic-upstream-key":
			const usage = `"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":40,"server_tool_use":{"web_search_requests":3}}`
			if !strings.Contains(string(body), `"stream":true`) {
				io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"gap-claude","content":[{"type":"text","text":"found"}],"stop_reason":"end_turn","stop_sequence":null,`+usage+`}`)
				return
			}
			sse()
			for _, e := range [][2]string{
				{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"gap-claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":1}}}`},
				{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
				{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"found"}}`},
				{"content_block_stop", `{"type":"content_block_stop","index":0}`},
				{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},` + usage + `}`},
				{"message_stop", `{"type":"message_stop"}`},
			} {
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
			}
		case r.URL.Path == "/v1/chat/completions" && r.Header.Get("Authorization") == "Bearer openai-operator-key":
			const serverError = `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`
			switch say := string(body); {
			case strings.Contains(say, "error-json"):
				io.WriteString(w, serverError)
			case strings.Contains(say, "error-stream"):
				sse()
				io.WriteString(w, "data: "+serverError+"\n\n")
			case strings.Contains(say, "cr-stream"):
				sse()
				const chunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gap-chat","choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":null}]}` + "\r\r"
				for _, s := range []string{"a", "b", "c"} {
					fmt.Fprintf(w, chunk, s)
				}
				io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gap-chat","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`+"\r\rdata: [DONE]\r\r")
			default:
				http.Error(w, `{"error":{"message":"unexpected","type":"invalid_request_error"}}`, http.StatusBadRequest)
			}
		case r.URL.Path == "/v1/responses" && r.Header.Get("Authorization") == "Bearer openai-operator-key":
			// OpenAI Responses streaming: a stream that fails with only an error event, and one
			// whose only event is response.failed without usage or output.
			sse()
			event := func(name, data string) { io.WriteString(w, "event: "+name+"\ndata: "+data+"\n\n") }
			// Each stream has a response id of its own (one account may not own another's).
			responses++
			id := fmt.Sprintf("resp_o%d", responses)
			opening := func() {
				for i, name := range []string{"response.created", "response.in_progress"} {
					event(name, fmt.Sprintf(`{"type":%q,"sequence_number":%d,"response":{"id":%q,"object":"response","created_at":1,"status":"in_progress","error":null,"incomplete_details":null,"model":"gap-chat","output":[],"usage":null}}`, name, i, id))
				}
			}
			failed := `{"type":"response.failed","sequence_number":%d,"response":{"id":"` + id + `","object":"response","created_at":1,"status":"failed","error":{"code":"server_error","message":"The model failed."},"incomplete_details":null,"model":"gap-chat","output":%s,"usage":null}}`
			switch say := string(body); {
			case strings.Contains(say, "opened-failed"):
				opening()
				event("response.failed", fmt.Sprintf(failed, 2, "[]"))
				return
			case strings.Contains(say, "opened-error"):
				opening()
				event("error", `{"type":"error","code":"server_error","message":"The server had an error while processing your request.","param":null,"sequence_number":2}`)
				return
			case strings.Contains(say, "output-failed"):
				opening()
				const item = `{"id":"msg_2","type":"message","status":"in_progress","content":[],"role":"assistant"}`
				event("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":`+item+`,"sequence_number":2}`)
				event("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_2","output_index":0,"content_index":0,"delta":"Hel","logprobs":[],"sequence_number":3}`)
				event("response.failed", fmt.Sprintf(failed, 4, "["+item+"]"))
				return
			}
			if strings.Contains(string(body), "failed-stream") {
				io.WriteString(w, "event: response.failed\ndata: "+`{"type":"response.failed","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"failed","error":{"code":"server_error","message":"The model failed."},"model":"gap-chat","output":[],"usage":null}}`+"\n\n")
				return
			}
			io.WriteString(w, "event: error\ndata: "+`{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":0}`+"\n\n")
		case r.URL.Path == "/v1/images/generations" && r.Header.Get("Authorization") == "Bearer openai-operator-key" && strings.Contains(string(body), `"stream":true`):
			sse()
			say := string(body)
			if !strings.Contains(say, "stream-error") {
				io.WriteString(w, "event: image_generation.partial_image\ndata: "+`{"type":"image_generation.partial_image","b64_json":"UEFSVA==","created_at":1,"size":"1024x1024","quality":"auto","background":"opaque","output_format":"png","partial_image_index":0}`+"\n\n")
			}
			if strings.Contains(say, "stream-error") || strings.Contains(say, "stream-partial") {
				io.WriteString(w, "event: error\ndata: "+`{"error":{"type":"server_error","code":"server_error","message":"The image could not be finished.","param":null}}`+"\n\n")
				return
			}
			io.WriteString(w, "event: image_generation.completed\ndata: "+`{"type":"image_generation.completed","b64_json":"QUJD","created_at":1,"size":"1024x1024","quality":"low","background":"opaque","output_format":"png",`+
				`"usage":{"total_tokens":100,"input_tokens":50,"output_tokens":50,"input_tokens_details":{"text_tokens":10,"image_tokens":40}}}`+"\n\n")
		case r.URL.Path == "/v1/images/edits" && r.Header.Get("Authorization") == "Bearer openai-operator-key" && strings.Contains(string(body), `"stream":true`):
			sse()
			io.WriteString(w, "event: image_edit.partial_image\ndata: "+`{"type":"image_edit.partial_image","b64_json":"UEFSVA==","created_at":1,"size":"1024x1024","quality":"auto","background":"opaque","output_format":"png","partial_image_index":0}`+"\n\n")
			io.WriteString(w, "event: image_edit.completed\ndata: "+`{"type":"image_edit.completed","b64_json":"QUJD","created_at":1,"size":"1024x1024","quality":"medium","background":"opaque","output_format":"png",`+
				`"usage":{"total_tokens":100,"input_tokens":50,"output_tokens":50,"input_tokens_details":{"text_tokens":10,"image_tokens":40}}}`+"\n\n")
		case r.URL.Path == "/v1/images/generations" && r.Header.Get("Authorization") == "Bearer openai-operator-key":
			io.WriteString(w, `{"created":1,"background":"opaque","data":[{"b64_json":"QUJD"},{"b64_json":"REVG"}],"output_format":"png",`+
				`"quality":"low","size":"1024x1024","usage":{"input_tokens":10,"input_tokens_details":{"image_tokens":0,"text_tokens":10},"output_tokens":544,"total_tokens":554}}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"wrong path or key","type":"invalid_request_error"}}`)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestBillingOfProviderReports runs the official SDKs (openai, @anthropic-ai/sdk, @google/genai) through a
// gateway whose models are priced, and reads what each call was held and charged:
//   - Gemini's toolUsePromptTokenCount is input and thoughtsTokenCount output: 210 input tokens
//     at 1000 and 25 output at 2000 per million, 0.26, streamed or not;
//   - Anthropic's web searches (server_tool_use) are not tokens: 30 input and 40 output, 0.11;
//   - a 200 whose body is only an error object, a stream of one error event, and Responses
//     streams of only an error event or a response.failed without usage, also after the opening
//     response.created and response.in_progress, are released;
//   - a Responses stream that failed after an output item and a delta is charged: its input as
//     estimated (21 tokens, the body's bytes / 4) and the delta's token, 0.022;
//   - a stream whose lines end with a bare CR is charged its usage (12 tokens, 0.012), not its
//     estimate;
//   - 2 images of quality auto at 1024x1024 are held at the highest band of the size (0.17
//     each) and charged at the quality the answer reports (low, 0.01 each);
//   - streamed images: a generation of quality auto whose completed event reports low is charged
//     0.01 (held 0.17); one of quality high, named, is charged as named (0.17) though its
//     completed event says low; a stream of only an error is released; a partial image then an
//     error is charged the estimate (0.17); a streamed edit of quality auto whose completed event
//     reports medium is charged 0.04 (the size's plain image price).
func TestBillingOfProviderReports(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	dir := nodeSDKs(t)
	fake := fakeBillingProviders(t)
	base, g := startSimGateway(t, billingReportsCaddyfile, map[string]string{"fake_url": fake.URL})
	accounts := []string{"gap-gemini", "gap-claude", "gap-errors", "gap-cr", "gap-image", "gap-late", "gap-image-stream", "gap-edit-stream"}
	for _, account := range accounts {
		keysEnv{g: g}.credit(t, account, "10", "reports-"+account)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "billing_reports_check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY="+base, "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "all ok") {
		t.Fatalf("node billing_reports_check.mjs: %v\n%s", err, out)
	}

	// Each account's ledger after its credit: the holds' ends, with what each charged.
	want := map[string]string{
		"gap-gemini":       "settle charged 0.26; settle charged 0.26",
		"gap-claude":       "settle charged 0.11; settle charged 0.11",
		"gap-errors":       "release; release; release; release; release; release",
		"gap-cr":           "settle charged 0.012",
		"gap-image":        "hold -0.34; settle charged 0.02",
		"gap-late":         "settle charged 0.022",
		"gap-image-stream": "hold -0.17; settle charged 0.01; hold -0.17; settle charged 0.17; hold -0.17; release; hold -0.17; settle charged 0.17",
		"gap-edit-stream":  "hold -0.17; settle charged 0.04",
	}
	for _, account := range accounts {
		admin := "http://" + g.admin + "/mediagw/accounts/" + account
		var got string
		waitFor(t, account+"'s holds to end", func() bool {
			b := call(t, "GET", admin+"/balance", "", nil)
			got = ledgerEnds(t, call(t, "GET", admin+"/ledger", "", nil), strings.HasPrefix(account, "gap-image") || account == "gap-edit-stream")
			return b.field("held") == "0" && strings.Count(got, ";") == strings.Count(want[account], ";")
		})
		// In any order: a request's settlement is written after its answer ended, which may be
		// after the client's next request took its hold.
		if sortedEntries(got) != sortedEntries(want[account]) {
			t.Errorf("%s: ledger %s, want %s (in any order)", account, got, want[account])
		}
	}
}

// ledgerEnds sums up a ledger page: each settle with what it charged and each release, and each
// hold's amount when holds is set.
func ledgerEnds(t *testing.T, ledger response, holds bool) string {
	t.Helper()
	entries, _ := ledger.json(t)["entries"].([]any)
	var parts []string
	for _, e := range entries {
		m, _ := e.(map[string]any)
		switch m["kind"] {
		case "settle":
			parts = append(parts, fmt.Sprint("settle charged ", m["charged"]))
		case "release":
			parts = append(parts, "release")
		case "hold":
			if holds {
				parts = append(parts, fmt.Sprint("hold ", m["amount"]))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// sortedEntries is a ledger summary's entries ("; "-separated), sorted.
func sortedEntries(summary string) string {
	entries := strings.Split(summary, "; ")
	slices.Sort(entries)
	return strings.Join(entries, "; ")
}
