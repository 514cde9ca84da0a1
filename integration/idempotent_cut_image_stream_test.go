package integration

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A streamed image generation (stream: true) with an Idempotency-Key is run once per key by the
// gateway, which keeps its answer for a retry. When the stream is cut before its end (here the
// provider drops the connection after a partial image), reverse_proxy aborts the answer: what
// had streamed is never replayed as a 200 (it has no image_generation.completed event, and the
// client could not tell it from a stream the provider ended). The partial image was charged, so
// the key is spent without its answer: the retry gets 409 idempotency_answer_not_kept.
func TestIdempotentCutImageStreamIsNotReplayedAsASuccess(t *testing.T) {
	var served atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/images/generations" || !strings.Contains(string(body), `"stream":true`) {
			http.NotFound(w, r)
			return
		}
		served.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "event: image_generation.partial_image\ndata: "+`{"type":"image_generation.partial_image","b64_json":"UEFSVA==","created_at":1,"size":"1024x1024","quality":"auto","background":"opaque","output_format":"png","partial_image_index":0}`+"\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(200 * time.Millisecond)
		panic(http.ErrAbortHandler) // the provider's connection drops mid-stream
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, streamCutCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "streamers", "1", "idem-create-cut-1")

	send := func() (status int, replayed string, events string, readErr error) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/images/generations", strings.NewReader(
			`{"model":"cut-image","prompt":"a lighthouse","n":1,"size":"1024x1024","stream":true,"partial_images":1}`))
		req.Header.Set("Authorization", "Bearer mg-stream-cut")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "stainless-node-retry-cut")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b.String(), sc.Err()
	}
	status, _, events, err := send()
	if status != 200 || !strings.Contains(events, "partial_image") || err == nil {
		t.Fatalf("first attempt = %d, %q, read error %v; want a stream cut after its partial image", status, events, err)
	}
	status, replayed, events, err2 := send()
	t.Logf("retry: %d Idempotent-Replayed=%q read error %v, provider asked %d times, events:\n%s", status, replayed, err2, served.Load(), events)
	if replayed == "true" && status == http.StatusOK && !strings.Contains(events, "image_generation.completed") {
		t.Fatalf("the retry of a stream the provider cut is answered with the cut stream as a kept success (200, Idempotent-Replayed: true, no completed event)")
	}
}
