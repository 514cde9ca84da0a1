package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// oneSlotVideoGateway starts a gateway that passes sora-2 through to provider, whose key
// mg-pass-video may have one active task (max_active_tasks 1), and credits its account 3.
func oneSlotVideoGateway(t *testing.T, provider http.Handler, credit string) (string, *gateway) {
	t.Helper()
	up := startFake(t, provider)
	caddyfile := strings.Replace(passVideoCaddyfile, "account filmmakers\n", "account filmmakers\n\t\t\tmax_active_tasks 1\n", 1)
	if caddyfile == passVideoCaddyfile {
		t.Fatal("the key block was not found")
	}
	base, g := startSimGateway(t, caddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", credit)
	return base, g
}

// giveUpOnCreate posts body to url with key's bearer and idempotencyKey, and gives up on it
// (cancels it) once the provider has it (received closed), as an SDK whose timeout runs out does.
func giveUpOnCreate(t *testing.T, url, key, body, idempotencyKey string, received <-chan struct{}) {
	t.Helper()
	gaveUp, giveUp := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(gaveUp, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", idempotencyKey)
		_, err := sendRequest(req)
		done <- err
	}()
	select {
	case <-received:
	case <-time.After(10 * time.Second):
		t.Fatal("the create never reached the provider")
	}
	giveUp()
	if err := <-done; err == nil {
		t.Fatal("the client that gave up got an answer")
	}
	time.Sleep(200 * time.Millisecond) // the gateway sees the client gone
}

// sendGivenUpCreate gives up on a video create of 8 s at 1280x720 (giveUpOnCreate).
func sendGivenUpCreate(t *testing.T, base string, provider *stallingFirstCreate, idempotencyKey string) {
	t.Helper()
	giveUpOnCreate(t, base+"/v1/videos", "mg-pass-video", `{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"8","size":"1280x720"}`,
		idempotencyKey, provider.received)
}

// releaser returns the func that lets provider answer its first create, which also runs when the
// test ends (a failed test does not leave the gateway waiting for the provider).
func releaser(t *testing.T, provider *stallingFirstCreate) func() {
	var once sync.Once
	release := func() { once.Do(func() { close(provider.release) }) }
	t.Cleanup(release)
	return release
}

// holdsTaken counts the holds in account's ledger.
func holdsTaken(t *testing.T, g *gateway, account string) int {
	t.Helper()
	n := 0
	for _, e := range ledgerEntries(t, g, account) {
		if e["kind"] == "hold" {
			n++
		}
	}
	return n
}

// TestGaveUpCreateRetriedAtTheSlotLimit: a key with max_active_tasks 1 creates a video, gives up
// on it (its timeout) while the provider makes it, and retries with the same Idempotency-Key, as
// the SDK does. The gateway kept the first attempt going and recorded its video, which holds the
// key's one slot. The retry is answered by the gateway with the first attempt's answer (the
// video), before any hold or slot is taken: it never reaches the provider, holds nothing, and
// the slot stays the video's, so a create with a new key is still refused 429 without reaching
// the provider. Before, the retry was refused 429 too_many_active_tasks until the video's lease
// ended (an hour): the client paid for a video whose id it could not learn.
func TestGaveUpCreateRetriedAtTheSlotLimit(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, _ := newFakeOpenAIVideos(t, "openai-operator-key")
	provider := &stallingFirstCreate{up: newIdempotentUpstream(fake, false), received: make(chan struct{}), release: make(chan struct{})}
	base, g := oneSlotVideoGateway(t, provider, "gave-up-slot-1")
	const key = "stainless-retry-slot"

	release := releaser(t, provider)
	sendGivenUpCreate(t, base, provider, key)
	release()
	awaitBalance(t, g, "filmmakers", "2.2", "0.8") // the first attempt's video carries its hold

	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	video, err := createVideo(ctx, client, "8", "1280x720", key)
	if err != nil || video.ID == "" {
		t.Fatalf("the SDK's retry of the create it gave up on = %+v, %v; want the video its first attempt made", video, err)
	}
	if served, replayed := provider.up.counts(); served != 1 || replayed != 0 {
		t.Fatalf("the provider served %d creates and replayed %d; want 1 and 0 (the gateway answered the retry)", served, replayed)
	}
	awaitBalance(t, g, "filmmakers", "2.2", "0.8")
	if n := holdsTaken(t, g, "filmmakers"); n != 1 {
		t.Fatalf("%d holds in the ledger, want 1: the retry holds nothing", n)
	}

	// The slot is still the video's: a create with a new key is refused before the provider.
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/videos", strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"4"}`))
	req.Header.Set("Authorization", "Bearer mg-pass-video")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "another-video")
	if r := do(t, req); r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "too_many_active_tasks") {
		t.Fatalf("a new create at the limit = %d %s, want 429 too_many_active_tasks", r.status, r.body)
	}
	if served, _ := provider.up.counts(); served != 1 {
		t.Fatalf("the provider served %d creates, want 1: the refused one never reaches it", served)
	}
	awaitBalance(t, g, "filmmakers", "2.2", "0.8")

	// Once the video ends, its slot is free: the new key's create goes through.
	awaitCompleted(ctx, t, client, video.ID)
	awaitBalance(t, g, "filmmakers", "2.2", "0")
	if second, err := createVideo(ctx, client, "4", "", "another-video"); err != nil || second.ID == video.ID {
		t.Fatalf("a new create after the video ended = %+v, %v", second, err)
	}
	awaitBalance(t, g, "filmmakers", "1.8", "0.4")
}

// TestRetryWaitsForTheCreateItGaveUpOn: the SDK's retry comes while the provider is still making
// the first attempt's video (the gateway still waiting for its answer). The retry waits for that
// attempt instead of being refused for the slot it holds, and gets its video once the provider
// answers; the provider is asked once, and one hold is taken.
func TestRetryWaitsForTheCreateItGaveUpOn(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, _ := newFakeOpenAIVideos(t, "openai-operator-key")
	provider := &stallingFirstCreate{up: newIdempotentUpstream(fake, false), received: make(chan struct{}), release: make(chan struct{})}
	base, g := oneSlotVideoGateway(t, provider, "gave-up-slot-2")
	const key = "stainless-retry-waits"

	release := releaser(t, provider)
	sendGivenUpCreate(t, base, provider, key)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type answer struct {
		video *openai.Video
		err   error
	}
	retried := make(chan answer, 1)
	go func() {
		v, err := createVideo(ctx, client, "8", "1280x720", key)
		retried <- answer{v, err}
	}()
	select {
	case a := <-retried:
		t.Fatalf("the retry was answered while its first attempt ran: %+v, %v", a.video, a.err)
	case <-time.After(500 * time.Millisecond):
	}
	release()
	a := <-retried
	if a.err != nil || a.video.ID == "" {
		t.Fatalf("the retry = %+v, %v; want the video its first attempt made", a.video, a.err)
	}
	if served, replayed := provider.up.counts(); served != 1 || replayed != 0 {
		t.Fatalf("the provider served %d creates and replayed %d; want 1 and 0", served, replayed)
	}
	awaitBalance(t, g, "filmmakers", "2.2", "0.8")
	if n := holdsTaken(t, g, "filmmakers"); n != 1 {
		t.Fatalf("%d holds in the ledger, want 1: the retry holds nothing", n)
	}
}

// TestConcurrentCreatesAtTheSlotLimit: a key with max_active_tasks 1 sends six video creates at
// once, three with one Idempotency-Key and three with another. The provider makes one video:
// every answer is that video (its create, or the gateway's replay of it for the same key) or
// 429 too_many_active_tasks, and only the video's hold is kept.
func TestConcurrentCreatesAtTheSlotLimit(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	var creates atomic.Int64
	up := fakeOpenAIVideoCreates(t, &creates)
	caddyfile := strings.Replace(passVideoCaddyfile, "account filmmakers\n", "account filmmakers\n\t\t\tmax_active_tasks 1\n", 1)
	base, g := startSimGateway(t, caddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "concurrent-slot-1")
	answers := make([]response, 6)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/videos", strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"4"}`))
			req.Header.Set("Authorization", "Bearer mg-pass-video")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", []string{"first", "second"}[i%2])
			r, err := sendRequest(req)
			if err != nil {
				t.Error(err)
			}
			answers[i] = r
		})
	}
	wg.Wait()
	if n := creates.Load(); n != 1 {
		t.Fatalf("the provider made %d videos, want 1", n)
	}
	made := 0
	for _, r := range answers {
		switch {
		case r.status == http.StatusOK && r.field("id") == "video_1":
			made++
		case r.status == http.StatusTooManyRequests && strings.Contains(string(r.body), "too_many_active_tasks"):
		default:
			t.Fatalf("a create at the limit = %d %s", r.status, r.body)
		}
	}
	if made != 3 {
		t.Fatalf("%d answers name the video, want the 3 of its key", made)
	}
	awaitBalance(t, g, "filmmakers", "2.6", "0.4")
	// The video's hold, and one of each refused create (released at its 429: a refused answer is
	// not kept, so each create of the other key runs); the replays hold nothing.
	if n := holdsTaken(t, g, "filmmakers"); n != 4 {
		t.Fatalf("%d holds in the ledger, want 4", n)
	}
}
