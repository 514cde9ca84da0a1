package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// channelsCaddyfile is one provider with two upstreams behind one reverse_proxy.
const channelsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider {{provider}} {
			models gpt-4o-mini other-chat
			upstream a {
				base_url {{a_url}}/v1
				api_key key-a
				weight {{a_weight}}
				priority {{a_priority}}
			}
			upstream b {
				base_url {{b_url}}/openai/v1
				api_key key-b
				priority {{b_priority}}
			}
			model_map gpt-4o-mini gpt-4o-mini-2024-07-18
		}
		key mg-channels {
			account acme
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_models /v1/models
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw {
				response_header_timeout 5s
			}
			lb_policy first
			lb_retries 2
		}
	}
}
`

// channel is a fake upstream account that answers chat completions, optionally streaming, and
// fails on command.
type channel struct {
	*httptest.Server
	name, key, prefix string
	requests          atomic.Int64
	// fail, when not 0, is the status every answer has (with Retry-After: retryAfter).
	fail       atomic.Int64
	retryAfter string
	// stall, when set, holds every answer until it is closed.
	stall chan struct{}

	mu     sync.Mutex
	times  []time.Time
	models []string
	bodies []string
}

func newChannel(t *testing.T, name, key, prefix string) *channel {
	c := &channel{name: name, key: key, prefix: prefix}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *channel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &req) // a multipart body has no JSON model; the body is kept below
	c.requests.Add(1)
	c.mu.Lock()
	c.times, c.models, c.bodies = append(c.times, time.Now()), append(c.models, req.Model), append(c.bodies, string(body))
	c.mu.Unlock()
	if c.stall != nil {
		select {
		case <-c.stall:
		case <-r.Context().Done():
			return
		}
	}
	if status := c.fail.Load(); status != 0 {
		if c.retryAfter != "" {
			w.Header().Set("Retry-After", c.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status))
		fmt.Fprintf(w, `{"error":{"message":"%s is failing","type":"server_error","code":"failing"}}`, c.name)
		return
	}
	if r.Header.Get("Authorization") == "Bearer "+c.key && r.URL.Path == c.prefix+"/v1/audio/transcriptions" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text":"heard by %s"}`, c.name)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+c.key || r.URL.Path != c.prefix+"/v1/chat/completions" || r.Host != strings.TrimPrefix(c.URL, "http://") {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"wrong key, path or host: %s %s","type":"auth","code":"bad"}}`, r.URL.Path, r.Host)
		return
	}
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, word := range []string{"hello ", "from ", c.name} {
			fmt.Fprintf(w, "data: {\"id\":\"c-%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", i, req.Model, word)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello from %s"}}]}`, req.Model, c.name)
}

// refusingURL is the address of a loopback port that nothing listens on.
func refusingURL(t *testing.T) string { return fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) }

func startChannels(t *testing.T, vars map[string]string) (string, *gateway) {
	t.Helper()
	// Upstream health outlives configs in this process; a provider name of its own keeps an
	// earlier test's cooldown (on a loopback port reused since) out of this one.
	all := map[string]string{"a_weight": "1", "a_priority": "0", "b_priority": "0", "provider": uniqueName("openai")}
	for k, v := range vars {
		all[k] = v
	}
	return startSimGateway(t, channelsCaddyfile, all)
}

func chatBody(model string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
}

// With one of two upstreams refusing connections, every request, streaming or not, is served.
func TestChannelsFailoverFromRefusingUpstream(t *testing.T) {
	b := newChannel(t, "b", "key-b", "/openai")
	base, _ := startChannels(t, map[string]string{"a_url": refusingURL(t), "b_url": b.URL, "a_weight": "3"})
	failures := 0
	for i := range 200 {
		stream := i%2 == 1
		r := call(t, http.MethodPost, base+"/v1/chat/completions", "mg-channels", chatBody("other-chat", stream))
		// The answer is b's own: "hello from b" whole, or its last streamed word.
		ok := r.status == http.StatusOK && strings.Contains(string(r.body), `"content":"hello from b"`)
		if stream {
			ok = r.status == http.StatusOK && strings.Contains(string(r.body), `"content":"from "`) &&
				strings.Contains(string(r.body), `"content":"b"`) && strings.HasSuffix(string(r.body), "data: [DONE]\n\n")
		}
		if !ok {
			failures++
			t.Logf("request %d: %d %s", i, r.status, r.body)
		}
	}
	if failures != 0 || b.requests.Load() != 200 {
		t.Fatalf("%d of 200 requests failed; b served %d", failures, b.requests.Load())
	}
}

// An upstream that answered 429 with Retry-After: 2 gets no request for 2 s, then serves again.
func TestChannelsRetryAfterCooldown(t *testing.T) {
	a, b := newChannel(t, "a", "key-a", ""), newChannel(t, "b", "key-b", "/openai")
	a.retryAfter = "2"
	a.fail.Store(http.StatusTooManyRequests)
	base, _ := startChannels(t, map[string]string{"a_url": a.URL, "b_url": b.URL, "b_priority": "1"})

	r := call(t, http.MethodPost, base+"/v1/chat/completions", "mg-channels", chatBody("other-chat", false))
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "hello from b") || a.requests.Load() != 1 {
		t.Fatalf("first request: %d %s (a saw %d)", r.status, r.body, a.requests.Load())
	}
	a.fail.Store(0)
	deadline := time.Now().Add(30 * time.Second)
	for a.requests.Load() < 2 && time.Now().Before(deadline) {
		r := call(t, http.MethodPost, base+"/v1/chat/completions", "mg-channels", chatBody("other-chat", false))
		if r.status != http.StatusOK {
			t.Fatalf("request failed: %d %s", r.status, r.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.times) < 2 {
		t.Fatalf("a never served again after its cooldown")
	}
	if gap := a.times[1].Sub(a.times[0]); gap < 2*time.Second {
		t.Fatalf("a got a request %v after its 429 with Retry-After: 2", gap)
	}
	if b.requests.Load() < 2 {
		t.Fatalf("b served %d requests during a's cooldown", b.requests.Load())
	}
}

// Weights 3:1 split 2,000 requests 3:1, within 10 %.
func TestChannelsWeights(t *testing.T) {
	a, b := newChannel(t, "a", "key-a", ""), newChannel(t, "b", "key-b", "/openai")
	base, _ := startChannels(t, map[string]string{"a_url": a.URL, "b_url": b.URL, "a_weight": "3"})
	var wg sync.WaitGroup
	var failed atomic.Int64
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				r, err := send(http.MethodPost, base+"/v1/chat/completions", "mg-channels", chatBody("other-chat", false))
				if err != nil || r.status != http.StatusOK {
					failed.Add(1)
				}
			}
		}()
	}
	for i := range 2000 {
		work <- i
	}
	close(work)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d requests failed", failed.Load())
	}
	if na, nb := a.requests.Load(), b.requests.Load(); na+nb != 2000 || na < 1350 || na > 1650 {
		t.Fatalf("a served %d, b %d; want 1500 ± 150 on a", na, nb)
	}
}

// model_map: the client sends and reads its own id; the upstream receives its id.
func TestChannelsModelAlias(t *testing.T) {
	a := newChannel(t, "a", "key-a", "")
	base, _ := startChannels(t, map[string]string{"a_url": a.URL, "b_url": refusingURL(t), "b_priority": "1"})
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-channels"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	page, err := oa.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"gpt-4o-mini", "other-chat"}) {
		t.Fatalf("models = %v; want the client ids only", ids)
	}

	chat, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil || chat.Model != "gpt-4o-mini" || chat.Choices[0].Message.Content != "hello from a" {
		t.Fatalf("chat = %+v, %v", chat, err)
	}
	stream := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var text strings.Builder
	for stream.Next() {
		c := stream.Current()
		if c.Model != "gpt-4o-mini" {
			t.Fatalf("stream chunk model = %q", c.Model)
		}
		text.WriteString(c.Choices[0].Delta.Content)
	}
	if err := stream.Err(); err != nil || text.String() != "hello from a" {
		t.Fatalf("stream %q, %v", text.String(), err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Equal(a.models, []string{"gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18"}) {
		t.Fatalf("upstream received models %v", a.models)
	}
	// Only the model's value changed: the rest of the body is the client's, byte for byte.
	if !strings.Contains(a.bodies[0], `"model":"gpt-4o-mini-2024-07-18"`) || strings.Contains(a.bodies[0], `"gpt-4o-mini"`) {
		t.Fatalf("upstream body %s", a.bodies[0])
	}
}

// Every upstream out of reach for the account (its own backoff after the failures it drew): 503
// with Retry-After, in the OpenAI error shape.
func TestChannelsNoneLeft(t *testing.T) {
	a, b := newChannel(t, "a", "key-a", ""), newChannel(t, "b", "key-b", "/openai")
	bin := caddyBinary(t) // built before the clock starts: a cold build takes a while
	a.retryAfter, b.retryAfter = "120", "120"
	a.fail.Store(http.StatusServiceUnavailable)
	b.fail.Store(http.StatusTooManyRequests)
	base, g := startChannels(t, map[string]string{"a_url": a.URL, "b_url": b.URL})
	r := call(t, http.MethodPost, base+"/v1/chat/completions", "mg-channels", chatBody("other-chat", false))
	if r.status != http.StatusServiceUnavailable && r.status != http.StatusTooManyRequests {
		t.Fatalf("first request: %d %s; want the last upstream's refusal", r.status, r.body)
	}
	if a.requests.Load() != 1 || b.requests.Load() != 1 {
		t.Fatalf("a saw %d, b %d requests; want one each", a.requests.Load(), b.requests.Load())
	}
	r = call(t, http.MethodPost, base+"/v1/chat/completions", "mg-channels", chatBody("other-chat", false))
	var e struct {
		Error struct{ Message, Type, Code string } `json:"error"`
	}
	decodeJSON(t, r.body, &e)
	if r.status != http.StatusServiceUnavailable || e.Error.Code != "upstream_unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("second request: %d %v %s", r.status, r.header, r.body)
	}
	if a.requests.Load() != 1 || b.requests.Load() != 1 {
		t.Fatalf("a cooling upstream was called")
	}

	// The admin API and `caddy mediagw upstreams` show each failure and the one account backing
	// off, and no credential. One account failing is no outage: both stay healthy for others.
	out, err := exec.Command(bin, "mediagw", "upstreams", "--address", g.admin).CombinedOutput()
	if err != nil {
		t.Fatalf("caddy mediagw upstreams: %v\n%s", err, out)
	}
	var view struct {
		Upstreams []struct {
			Provider, Name, Address string
			Healthy                 bool
			CoolingUntil            *time.Time `json:"cooling_until"`
			Failures                int
			Backing                 int                       `json:"accounts_backing_off"`
			Recent                  []struct{ Reason string } `json:"recent_failures"`
		}
	}
	decodeJSON(t, out, &view)
	if len(view.Upstreams) != 2 || strings.Contains(string(out), "key-a") || strings.Contains(string(out), "key-b") {
		t.Fatalf("upstreams: %s", out)
	}
	for i, want := range []string{"HTTP 503", "HTTP 429"} {
		u := view.Upstreams[i]
		if !u.Healthy || u.CoolingUntil != nil || u.Failures != 1 || u.Backing != 1 ||
			len(u.Recent) != 1 || u.Recent[0].Reason != want {
			t.Fatalf("upstream %d: %+v; want one account backing off after %s", i, u, want)
		}
	}
}

// A multipart upload refused with 503 by the first upstream reaches the second byte for byte as
// it reached the first: the client's parts, re-encoded with the gateway's boundary.
func TestChannelsMultipartReplayed(t *testing.T) {
	a, b := newChannel(t, "a", "key-a", ""), newChannel(t, "b", "key-b", "/openai")
	a.fail.Store(http.StatusServiceUnavailable)
	base, _ := startChannels(t, map[string]string{"a_url": a.URL, "b_url": b.URL, "b_priority": "1"})
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	file, _ := mw.CreateFormFile("file", "talk.mp3")
	audio := make([]byte, 3<<20) // past spool_memory: spooled to a file
	if _, err := rand.Read(audio); err != nil {
		t.Fatal(err)
	}
	file.Write(audio)
	mw.WriteField("model", "other-chat")
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/audio/transcriptions", bytes.NewReader(body.Bytes()))
	req.Header.Set("Authorization", "Bearer mg-channels")
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r := do(t, req)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "heard by b") {
		t.Fatalf("transcription: %d %s", r.status, r.body)
	}
	a.mu.Lock()
	b.mu.Lock()
	defer a.mu.Unlock()
	defer b.mu.Unlock()
	if len(a.bodies) != 1 || len(b.bodies) != 1 || a.bodies[0] != b.bodies[0] {
		t.Fatalf("a got %d bodies, b %d; want one and the same at both", len(a.bodies), len(b.bodies))
	}
	gatewayBoundary, _, _ := strings.Cut(strings.TrimPrefix(a.bodies[0], "--"), "\r\n")
	if want := strings.ReplaceAll(body.String(), mw.Boundary(), gatewayBoundary); gatewayBoundary == mw.Boundary() || a.bodies[0] != want {
		t.Fatalf("forwarded boundary %q; want the client's parts, byte for byte, with a boundary of the gateway's", gatewayBoundary)
	}
}

// An upstream that sends no response headers within response_header_timeout: the request moves
// to the next upstream, and the client sees one answer.
func TestChannelsTimeoutBeforeHeaders(t *testing.T) {
	a, b := newChannel(t, "a", "key-a", ""), newChannel(t, "b", "key-b", "/openai")
	a.stall = make(chan struct{})
	defer close(a.stall)
	base, _ := startChannels(t, map[string]string{"a_url": a.URL, "b_url": b.URL, "b_priority": "1"})
	r := call(t, http.MethodPost, base+"/v1/chat/completions", "mg-channels", chatBody("other-chat", false))
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "hello from b") || a.requests.Load() != 1 || b.requests.Load() != 1 {
		t.Fatalf("%d %s; a saw %d, b %d", r.status, r.body, a.requests.Load(), b.requests.Load())
	}
}

// uniqueName is prefix and a number no other call in this process returns.
func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, uniqueCounter.Add(1)) }

var uniqueCounter atomic.Int64
