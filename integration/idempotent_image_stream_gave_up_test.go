package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A client gives up on a create and its SDK retries it with the same Idempotency-Key, for a
// streamed image generation: the provider opens its stream (200 text/event-stream) but sends no
// event before the client's timeout. The gateway then cuts the provider's stream
// (keptCreate.followClient): nothing was made, and the hold is released. The held 200 head with
// its empty body is no answer to keep: the key is freed (as for an answer never sent), and the
// retry reaches the provider and gets its image, instead of an empty "successful" stream
// replayed for 24 h.
func TestIdempotentImageStreamGivenUpIsRunAgain(t *testing.T) {
	var calls atomic.Int64
	gone := make(chan struct{}, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.URL.Path != "/v1/images/generations" {
			http.NotFound(w, r)
			return
		}
		n := calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if n == 1 {
			// The first attempt: slow to its first event; its client gives up meanwhile.
			select {
			case <-r.Context().Done():
				gone <- struct{}{}
			case <-time.After(10 * time.Second):
			}
			return
		}
		fmt.Fprint(w, "event: image_generation.completed\ndata: "+`{"type":"image_generation.completed","b64_json":"RE9ORQ==","created_at":1,"size":"1024x1024","quality":"auto","background":"opaque","output_format":"png","usage":{"total_tokens":100,"input_tokens":50,"output_tokens":50,"input_tokens_details":{"text_tokens":50,"image_tokens":0}}}`+"\n\n")
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, streamCutCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "streamers", "1", "idem-create-gave-up-1")
	const body = `{"model":"cut-image","prompt":"a lighthouse","n":1,"size":"1024x1024","stream":true}`
	post := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/images/generations", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer mg-stream-cut")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "stainless-node-retry-gave-up")
		return client.Do(req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	if resp, err := post(ctx); err == nil {
		resp.Body.Close()
		t.Fatalf("the first attempt answered %d before its first event", resp.StatusCode)
	}
	cancel()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the provider never saw the first attempt's client leave")
	}
	awaitBalance(t, g, "streamers", "1", "0") // the first attempt made nothing: its hold was released
	resp, err := post(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	events, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("retry: %d Idempotent-Replayed=%q, provider asked %d times, body %q", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), calls.Load(), events)
	if !strings.Contains(string(events), "image_generation.completed") {
		t.Fatalf("the SDK's retry of an image stream its client gave up on before any event = %d (Idempotent-Replayed %q) %q; want the image, made by a second run (the first made nothing and was charged nothing)",
			resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), events)
	}
}
