package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// streamCutCaddyfile routes chat and image generation to a fake OpenAI upstream ({{up_url}})
// with output-priced chat and per-image prices, for an account credited in the test.
const streamCutCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models cut-chat cut-image
		}
		price cut-chat {
			output_tokens 1000
		}
		price cut-image {
			image 0.04
		}
		key mg-stream-cut {
			account streamers
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

// fakeOpenAIStreams answers chat completions as OpenAI's streaming reference shows (chunks of
// object chat.completion.chunk, one delta each, then a usage chunk when
// stream_options.include_usage is set, then [DONE]): it sends 5 deltas, then waits until the
// gateway has gone (or 30 s), then 20 more and the usage. (The gateway reads a stream of text
// its client left on for 10 s, for its usage: see TestStreamLeftBeforeUsageIsChargedItsUsage;
// this one stays silent past that, so it is cut.) Image generations answer n-1 items of
// data (the provider made fewer than asked); streamed ones open their stream, with a partial
// image when the prompt asks for one, and wait for the client to leave (signalled on
// imageGone).
func fakeOpenAIStreams(t *testing.T, gone, imageGone chan struct{}) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" {
			http.Error(w, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`, 401)
			return
		}
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/images/generations":
			if strings.Contains(string(body), `"stream":true`) {
				// A streamed generation (OpenAI's image streaming events): the stream opens, with a
				// partial image when the prompt says so, and then waits for the client to leave.
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				if strings.Contains(string(body), "with a partial image") {
					fmt.Fprint(w, "event: image_generation.partial_image\ndata: "+`{"type":"image_generation.partial_image","b64_json":"UEFSVA==","created_at":1,"size":"1024x1024","quality":"auto","background":"opaque","output_format":"png","partial_image_index":0}`+"\n\n")
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					imageGone <- struct{}{}
				case <-time.After(10 * time.Second):
				}
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"created":1,"data":[{"url":"https://cdn.example.com/1.png"},{"url":"https://cdn.example.com/2.png"}]}`)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			flusher := w.(http.Flusher)
			chunk := func(text string) {
				fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"cut-chat\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", text)
				flusher.Flush()
			}
			for i := range 5 {
				chunk(fmt.Sprint("w", i))
			}
			select {
			case <-r.Context().Done():
				close(gone)
				return
			case <-time.After(30 * time.Second):
			}
			for i := range 20 {
				chunk(fmt.Sprint("w", 5+i))
			}
			fmt.Fprint(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"cut-chat\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":25,\"total_tokens\":34}}\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestCutStreamSettlesFromDeltasSeen: a streamed chat whose client disconnects after 5 deltas,
// and whose upstream sends nothing more within the 10 s the gateway reads on, is charged 5
// output tokens (0.005 at 1000 per million), not its estimate of max_tokens 200 (0.2), nor the
// 25 the whole stream would have had; an image generation asking for 3 images
// holds 3 × 0.04 and is charged for the 2 items in data; a streamed image generation the client
// leaves after a partial image is charged its estimate (0.04), one it leaves before any image is
// released. The ledger sums to the balance.
func TestCutStreamSettlesFromDeltasSeen(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	gone, imageGone := make(chan struct{}), make(chan struct{}, 2)
	up := fakeOpenAIStreams(t, gone, imageGone)
	base, g := startSimGateway(t, streamCutCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	admin := "http://" + g.admin + "/mediagw/accounts/streamers"
	keysEnv{g: g}.credit(t, "streamers", "1", "stream-cut-1")

	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(
		`{"model":"cut-chat","stream":true,"stream_options":{"include_usage":true},"max_tokens":200,"messages":[{"role":"user","content":"count"}]}`))
	req.Header.Set("Authorization", "Bearer mg-stream-cut")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("streamed chat: %v %v", resp, err)
	}
	lines := bufio.NewScanner(resp.Body)
	deltas := 0
	for deltas < 5 && lines.Scan() {
		if strings.Contains(lines.Text(), `"delta"`) {
			deltas++
		}
	}
	if deltas != 5 {
		t.Fatalf("read %d deltas before the pause, want 5", deltas)
	}
	// The stream's hold of 0.2 (max_tokens 200) is in force: a chat of 0.9 does not fit what it
	// leaves, though it would fit the balance without it. (A request's hold is transient: the
	// balance API shows it only once the request ends, with its settlement.)
	over := call(t, "POST", base+"/v1/chat/completions", "mg-stream-cut",
		`{"model":"cut-chat","max_tokens":900,"messages":[{"role":"user","content":"count"}]}`)
	resp.Body.Close() // the client leaves midway
	if over.status != 402 {
		t.Fatalf("a chat past what the stream's hold leaves = %d %s; want 402", over.status, over.body)
	}
	select {
	case <-gone:
	case <-time.After(25 * time.Second):
		t.Fatal("the upstream never saw the gateway leave, 10 s after the client did")
	}
	settleBy := time.Now().Add(30 * time.Second)
	for b := call(t, "GET", admin+"/balance", "", nil); b.field("held") != "0" || b.field("balance") == "1"; b = call(t, "GET", admin+"/balance", "", nil) {
		if time.Now().After(settleBy) {
			t.Fatalf("the cut stream's hold did not end: balance %s, ledger %s", call(t, "GET", admin+"/balance", "", nil).body, call(t, "GET", admin+"/ledger", "", nil).body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b := call(t, "GET", admin+"/balance", "", nil); b.field("balance") != "0.995" {
		t.Fatalf("after the cut stream: %s, want 0.995 (5 output tokens charged)", b.body)
	}

	r := call(t, "POST", base+"/v1/images/generations", "mg-stream-cut", `{"model":"cut-image","prompt":"a lighthouse","n":3,"size":"1024x1024"}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"data"`) {
		t.Fatalf("image generation = %d %s", r.status, r.body)
	}
	if b := call(t, "GET", admin+"/balance", "", nil); b.field("balance") != "0.915" || b.field("held") != "0" {
		t.Fatalf("after 2 of 3 images: %s, want 0.915 (0.08 charged) and nothing held", b.body)
	}
	// Streamed image generations the client leaves before any completed image: one after a
	// partial image is charged its estimate (0.04), one before any image is released.
	for _, prompt := range []string{"a lighthouse with a partial image", "a lighthouse"} {
		// Without an event the answer's head is not sent yet (the gateway sends it with the
		// first event, once its ids are recorded): that client leaves at its own timeout.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if !strings.Contains(prompt, "partial") {
			ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/images/generations", strings.NewReader(
			`{"model":"cut-image","prompt":"`+prompt+`","n":1,"size":"1024x1024","stream":true,"partial_images":1}`))
		req.Header.Set("Authorization", "Bearer mg-stream-cut")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if strings.Contains(prompt, "partial") {
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("streamed image generation: %v %v", resp, err)
			}
			lines := bufio.NewScanner(resp.Body)
			for lines.Scan() && !strings.Contains(lines.Text(), "image_generation.partial_image") {
			}
			resp.Body.Close() // the client leaves before the completed image
		} else if err == nil {
			t.Fatalf("a streamed image generation without events answered %d before its first event", resp.StatusCode)
		}
		cancel()
		select {
		case <-imageGone:
		case <-time.After(10 * time.Second):
			t.Fatal("the upstream never saw the image stream's client leave")
		}
	}
	want := []string{"credit 1 <nil>", "hold -0.2 <nil>", "settle 0.195 0.005", "hold -0.12 <nil>", "settle 0.04 0.08",
		"hold -0.04 <nil>", "settle 0 0.04", "hold -0.04 <nil>", "release 0.04 <nil>"}
	var kinds []string
	// The handler ends a hold after the client has gone: the ledger has its end soon after.
	waitFor(t, "the image streams' holds to end", func() bool {
		kinds = nil
		for _, e := range call(t, "GET", admin+"/ledger", "", nil).json(t)["entries"].([]any) {
			m := e.(map[string]any)
			kinds = append(kinds, fmt.Sprint(m["kind"], " ", m["amount"], " ", m["charged"]))
		}
		return len(kinds) >= len(want)
	})
	if b := call(t, "GET", admin+"/balance", "", nil); b.field("balance") != "0.875" || b.field("held") != "0" {
		t.Fatalf("after the image streams: %s, want 0.875 (0.04 charged) and nothing held", b.body)
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("ledger = %v, want %v", kinds, want)
	}
}
