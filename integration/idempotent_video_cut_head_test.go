package integration

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A video create whose provider answers 200 and drops the connection before the body (a faulty
// or hostile provider; a network cut): reverse_proxy aborts, the client gets a broken answer and
// retries with its Idempotency-Key. The empty 200 (CreatedWriter.Finish releases the held head
// with the empty body, which has no id to record) is not kept as the key's answer, which the SDK
// could not decode and would not retry: a cut answer is never replayed.
func TestIdempotentVideoCreateCutAfterItsHeadIsNotKept(t *testing.T) {
	var creates atomic.Int64
	up := fakeVideoCreatesFailingFirst(t, &creates, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "180")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops before the body
	})
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "idem-create-cut-head-1")
	post := func() (response, error) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/videos", strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"4"}`))
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "stainless-retry-cut-head")
		return sendRequest(req)
	}
	first, err := post()
	t.Logf("first attempt: %d %q, %v", first.status, first.body, err)
	retry, err := post()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	t.Logf("balance after the cut create: %s", call(t, "GET", "http://"+g.admin+"/mediagw/accounts/filmmakers/balance", "", nil).body)
	t.Logf("retry: %d Idempotent-Replayed=%q %q; provider asked %d times", retry.status, retry.header.Get("Idempotent-Replayed"), retry.body, creates.Load())
	if retry.status == http.StatusOK && retry.field("id") == "" {
		t.Fatalf("the retry of a create whose answer was cut = 200 %q (Idempotent-Replayed %q): a cut answer was kept for the key", retry.body, retry.header.Get("Idempotent-Replayed"))
	}
}
