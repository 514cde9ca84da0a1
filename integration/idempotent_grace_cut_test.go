package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGraceCutCreateChargedKeepsItsKeySpent: a video create with an Idempotency-Key whose client
// leaves, and whose provider has not answered when create_grace runs out: the gateway cuts the
// call and charges the estimate (the provider had the request, and may well make the video). Its
// key stays spent: the retry with the same key is 409 idempotency_answer_not_kept and never
// reaches the provider. Before the fix the key was freed (the cut answer was no 2xx), and the
// retry was sent and held again.
func TestGraceCutCreateChargedKeepsItsKeySpent(t *testing.T) {
	var creates atomic.Int64
	firstEnded := make(chan struct{})
	up := fakeVideoCreatesFailingFirst(t, &creates, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // a slow provider: the gateway gives up first
		close(firstEnded)
	})
	caddyfile := strings.Replace(passVideoCaddyfile, "\t\tmediagw_route\n", "\t\tmediagw_route {\n\t\t\tcreate_grace 2s\n\t\t}\n", 1)
	if caddyfile == passVideoCaddyfile {
		t.Fatal("mediagw_route was not found")
	}
	base, g := startSimGateway(t, caddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "grace-cut-1")
	post := func(ctx context.Context) (response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/videos", strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"4"}`))
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "grace-cut")
		return sendRequest(req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := post(ctx) // the client gives up after 1 s
	cancel()
	t.Logf("first attempt: %v", err)
	select {
	case <-firstEnded:
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway never cut the first create")
	}
	awaitBalance(t, g, "filmmakers", "2.6", "0") // the cut create is charged its estimate
	retry, err := post(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e, _ := retry.json(t)["error"].(map[string]any)
	if retry.status != 409 || e == nil || e["code"] != "idempotency_answer_not_kept" || retry.header.Get("X-Should-Retry") != "false" {
		t.Errorf("the retry of the charged, cut create = %d %s; want 409 idempotency_answer_not_kept, X-Should-Retry: false", retry.status, retry.body)
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("the provider was asked %d times; want once", n)
	}
	awaitBalance(t, g, "filmmakers", "2.6", "0")
}
