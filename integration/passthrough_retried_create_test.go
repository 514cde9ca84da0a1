package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// idempotentUpstream keeps the answer of each create it is sent with an Idempotency-Key and
// answers a create with a key it has seen with that answer again, as providers that honour the
// header do (the OpenAI and Anthropic SDKs send one on their retries).
type idempotentUpstream struct {
	next    http.Handler
	mu      sync.Mutex
	answers map[string]*httptest.ResponseRecorder
}

func (u *idempotentUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if r.Method != http.MethodPost || key == "" {
		u.next.ServeHTTP(w, r)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	kept, ok := u.answers[key]
	if !ok {
		kept = httptest.NewRecorder()
		u.next.ServeHTTP(kept, r)
		u.answers[key] = kept
	}
	for k, v := range kept.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(kept.Code)
	w.Write(kept.Body.Bytes())
}

// TestRetriedVideoCreateIsPaidOnce: a client retries a video create with the Idempotency-Key it
// sent first (as the SDKs do after a timeout), and the provider, which keeps answers by that
// key, answers the retry with the video the first create made. That video is paid for once: its
// first create's hold (0.8, 8 s at 1280x720), settled when openai-go retrieves it completed; the
// retry's hold is released (the ledger says so), and the account is charged 0.8 in all. Before,
// the retry was settled at its estimate too: one video cost 1.6.
func TestRetriedVideoCreateIsPaidOnce(t *testing.T) {
	fake, _ := newFakeOpenAIVideos(t, "openai-operator-key")
	up := startFake(t, &idempotentUpstream{next: fake, answers: map[string]*httptest.ResponseRecorder{}})
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "retried-1")
	create := func() string {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/videos", strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"8","size":"1280x720"}`))
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "stainless-retry-5b2c")
		r := do(t, req)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		return r.field("id")
	}
	first := create()
	awaitBalance(t, g, "filmmakers", "2.2", "0.8")
	if again := create(); again != first {
		t.Fatalf("the retry made %s, not %s: the fake does not keep answers", again, first)
	}
	awaitBalance(t, g, "filmmakers", "2.2", "0.8") // the retry's hold released

	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 5 {
		v, err := client.Videos.Get(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status == openai.VideoStatusCompleted {
			break
		}
	}
	awaitBalance(t, g, "filmmakers", "2.2", "0")
	releases := 0
	for _, e := range ledgerEntries(t, g, "filmmakers") {
		if e["kind"] == "release" && strings.Contains(e["note"].(string), "earlier request") {
			releases++
		}
	}
	if releases != 1 {
		t.Errorf("%d releases of the retry's hold in the ledger, want 1", releases)
	}
}
