package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/mediagw/mediagw/internal/testredis"
)

// idempotentUpstream is a provider that honours Idempotency-Key as providers that keep answers by
// it do: the first POST with a key is served by next and its answer kept; a later POST with the
// same key is answered with the kept answer (the same object), not served again. With dropFirst,
// the first attempt of each key makes its object and sends its whole answer, then drops the
// connection before the answer's declared end: the gateway has the object's id, the client an
// error it retries (as a network fault between the two would give it).
type idempotentUpstream struct {
	next      http.Handler
	dropFirst bool

	mu      sync.Mutex
	answers map[string]*httptest.ResponseRecorder
	// served counts the POSTs that reached next; replayed those answered from a kept answer.
	served, replayed int
	// onReplay, when set, runs before a kept answer is sent again (the retry waits for it).
	onReplay func()
}

func newIdempotentUpstream(next http.Handler, dropFirst bool) *idempotentUpstream {
	return &idempotentUpstream{next: next, dropFirst: dropFirst, answers: map[string]*httptest.ResponseRecorder{}}
}

func (u *idempotentUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if r.Method != http.MethodPost || key == "" {
		u.next.ServeHTTP(w, r)
		return
	}
	u.mu.Lock()
	kept, ok := u.answers[key]
	if ok {
		u.replayed++
	} else {
		kept = httptest.NewRecorder()
		u.next.ServeHTTP(kept, r)
		u.answers[key] = kept
		u.served++
	}
	onReplay := u.onReplay
	u.mu.Unlock()
	if ok && onReplay != nil {
		onReplay()
	}
	for k, v := range kept.Header() {
		w.Header()[k] = v
	}
	if !ok && u.dropFirst {
		w.Header().Set("Content-Length", strconv.Itoa(kept.Body.Len()+1))
		w.WriteHeader(kept.Code)
		w.Write(kept.Body.Bytes())
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // the connection closes one byte short
	}
	w.WriteHeader(kept.Code)
	w.Write(kept.Body.Bytes())
}

func (u *idempotentUpstream) counts() (served, replayed int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.served, u.replayed
}

// replayReleases counts the releases in account's ledger noted as a replay's.
func replayReleases(t *testing.T, g *gateway, account string) int {
	t.Helper()
	n := 0
	for _, e := range ledgerEntries(t, g, account) {
		if note, _ := e["note"].(string); e["kind"] == "release" && strings.Contains(note, "a replay") {
			n++
		}
	}
	return n
}

// awaitCompleted retrieves a video through client until it shows completed.
func awaitCompleted(ctx context.Context, t *testing.T, client openai.Client, id string) {
	t.Helper()
	for range 6 {
		v, err := client.Videos.Get(ctx, id)
		if err != nil {
			t.Fatalf("retrieve %s: %v", id, err)
		}
		if v.Status == openai.VideoStatusCompleted {
			return
		}
	}
	t.Fatalf("%s never completed", id)
}

// createVideo creates a video through client with a JSON body (the fake of OpenAI's videos API
// takes JSON creates; the SDK's Videos.New sends a form) of seconds and size ("" leaves it out),
// sending idempotencyKey when it is not "". The SDK retries it as it retries any create.
func createVideo(ctx context.Context, client openai.Client, seconds, size, idempotencyKey string) (*openai.Video, error) {
	body := map[string]any{"model": "sora-2", "prompt": "a lighthouse at dusk", "seconds": seconds}
	if size != "" {
		body["size"] = size
	}
	var opts []option.RequestOption
	if idempotencyKey != "" {
		opts = append(opts, option.WithHeader("Idempotency-Key", idempotencyKey))
	}
	var video openai.Video
	err := client.Post(ctx, "videos", body, &video, opts...)
	return &video, err
}

// TestRetriedVideoCreateIsPaidOnce: openai-go creates a video with an Idempotency-Key; the
// provider makes it and answers, but the connection drops before the answer's end, so the client
// gets an error and retries with the same key (the SDK's own retry). The gateway recorded the
// video from the first attempt's whole answer (held 0.8 for 8 s at 1280x720, carried by its
// record) and kept that answer for the key, so it answers the retry itself: the provider is asked
// once, the retry holds nothing, and the video, settled when openai-go retrieves it completed, is
// paid for once: 0.8. Before, the retry was settled at its estimate as well: one video cost 1.6
// (and, until the gateway kept such answers, the retry went to the provider, which answered it
// with the video it made, and its hold was released as a replay).
func TestRetriedVideoCreateIsPaidOnce(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, _ := newFakeOpenAIVideos(t, "openai-operator-key")
	provider := newIdempotentUpstream(fake, true)
	up := startFake(t, provider)
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "retried-1")
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	video, err := createVideo(ctx, client, "8", "1280x720", "stainless-retry-5b2c")
	if err != nil || video.ID == "" {
		t.Fatalf("create = %+v, %v", video, err)
	}
	if served, replayed := provider.counts(); served != 1 || replayed != 0 {
		t.Fatalf("the provider served %d creates and replayed %d; want 1 and 0 (the gateway answered the SDK's retry)", served, replayed)
	}
	awaitBalance(t, g, "filmmakers", "2.2", "0.8") // the first attempt's hold, carried by the video
	awaitCompleted(ctx, t, client, video.ID)
	awaitBalance(t, g, "filmmakers", "2.2", "0")
	if n := holdsTaken(t, g, "filmmakers"); n != 1 {
		t.Fatalf("%d holds in the ledger, want 1: the retry holds nothing", n)
	}

	// A create without a key is no replay, whatever the provider answers: a second video.
	second, err := createVideo(ctx, client, "4", "", "")
	if err != nil || second.ID == video.ID {
		t.Fatalf("create without a key = %+v, %v", second, err)
	}
	awaitBalance(t, g, "filmmakers", "1.8", "0.4")
}

// reusingVideosUpstream is a hostile provider: it answers every video create with one id,
// whatever its Idempotency-Key, and reads that video as completed (8 s at 1280x720).
func reusingVideosUpstream(t *testing.T) (*httptest.Server, *fakeLog) {
	t.Helper()
	log := &fakeLog{}
	return startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.record(r)
		status := "queued"
		if r.Method == http.MethodGet {
			status = "completed"
		}
		writeFakeJSON(w, http.StatusOK, map[string]any{"id": "video_reused", "object": "video", "model": "sora-2",
			"status": status, "progress": 0, "created_at": time.Now().Unix(), "seconds": "8", "size": "1280x720"})
	})), log
}

// TestReusedVideoIDWithAnotherKeyIsCharged: a provider answers two creates of one account,
// each sent by openai-go with an Idempotency-Key of its own, with one video id. The second is no
// replay of the first (another key): each is charged its 0.8, the first when the video is seen
// completed, the second with its create, and no release is noted as a replay. (The release of
// any create answered with an id its account had, reverted in 4cf6706, made the second free.)
func TestReusedVideoIDWithAnotherKeyIsCharged(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	up, log := reusingVideosUpstream(t)
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "reused-1")
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 {
		v, err := createVideo(ctx, client, "8", "1280x720", fmt.Sprintf("order-%d", i))
		if err != nil || v.ID != "video_reused" {
			t.Fatalf("create %d = %+v, %v", i, v, err)
		}
	}
	if n := len(log.matching("POST", "/v1/videos")); n != 2 {
		t.Fatalf("the provider saw %d creates, want 2", n)
	}
	keys := map[string]bool{}
	for _, r := range log.matching("POST", "/v1/videos") {
		keys[r.Header.Get("Idempotency-Key")] = true
	}
	if len(keys) != 2 {
		t.Fatalf("the provider saw the keys %v, want two", keys)
	}
	awaitBalance(t, g, "filmmakers", "1.4", "0.8") // the second settled with its create, the first held
	awaitCompleted(ctx, t, client, "video_reused")
	awaitBalance(t, g, "filmmakers", "1.4", "0")
	if n := replayReleases(t, g, "filmmakers"); n != 0 {
		t.Fatalf("%d releases noted as a replay, want 0", n)
	}
}

// TestRetryOnAnotherInstanceIsAnsweredOnce: two gateways on one redis-server. openai-go's first
// attempt goes to A, which records the video from the provider's whole answer and keeps that
// answer for its Idempotency-Key before the connection drops; the SDK's retry (same key) goes to
// B, as a load balancer may send it, and B answers it with A's kept answer: the provider is asked
// once, one hold is taken, and the account is charged 0.8 once, when the video is seen completed.
// (Until the gateway kept such answers, the retry went to the provider, which answered it with the
// video, and B released the retry's hold as a replay, racing the first hold's settlement.)
func TestRetryOnAnotherInstanceIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	fake, _ := newFakeOpenAIVideos(t, "openai-operator-key")
	provider := newIdempotentUpstream(fake, true)
	up := startFake(t, provider)
	var gws []*gateway
	var bases []string
	redis := testredis.Start(t, testredis.Options{}).URL()
	for range 2 {
		adminPort, port := freePort(t), freePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		startCaddyProcess(t, fmt.Sprintf(passVideoInstanceCaddyfile, adminPort, redis, up.URL, port, strings.TrimPrefix(up.URL, "http://")), base+"/")
		gws, bases = append(gws, &gateway{t: t, admin: fmt.Sprintf("127.0.0.1:%d", adminPort)}), append(bases, base)
	}
	keysEnv{g: gws[0]}.credit(t, "filmmakers", "3", "instances-1")

	// The first attempt reaches A, every retry B (as a load balancer in front may send them):
	// the SDK checks a request's origin before its HTTP client sends it.
	toB := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if n, _ := strconv.Atoi(r.Header.Get("X-Stainless-Retry-Count")); n > 0 {
			r = r.Clone(r.Context())
			r.URL.Host = strings.TrimPrefix(bases[1], "http://")
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	client := openai.NewClient(option.WithBaseURL(bases[0]+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(2), option.WithHTTPClient(toB))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	video, err := createVideo(ctx, client, "8", "1280x720", "stainless-retry-9d1e")
	if err != nil || video.ID == "" {
		t.Fatalf("create = %+v, %v", video, err)
	}
	if served, replayed := provider.counts(); served != 1 || replayed != 0 {
		t.Fatalf("the provider served %d creates and replayed %d; want 1 and 0 (B answered the retry)", served, replayed)
	}
	awaitCompleted(ctx, t, openai.NewClient(option.WithBaseURL(bases[1]+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(3)), video.ID)
	awaitBalance(t, gws[1], "filmmakers", "2.2", "0")
	ends := holdEnds(ledgerEntries(t, gws[0], "filmmakers"))
	settled, replays := 0, 0
	for id, e := range ends {
		if len(e) != 1 {
			t.Fatalf("hold %s ended %d times: %v", id, len(e), e)
		}
		note, _ := e[0]["note"].(string)
		switch {
		case e[0]["kind"] == "settle":
			settled++
		case strings.Contains(note, "a replay"):
			replays++
		}
	}
	if settled != 1 || replays != 0 || len(ends) != 1 {
		t.Fatalf("hold ends %v; want one settlement", ends)
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRetriedBackgroundResponseIsPaidOnce: openai-go creates a background response (an image
// tool, 1024x1024 high, max_tool_calls 1: held 0.1 of tokens and 0.17 of image) with an
// Idempotency-Key; the connection drops past the provider's whole answer (queued), the SDK
// retries with the same key, and the provider answers the retry with the response it made. The
// first attempt, recorded and left by its client, is charged its estimate, 0.27, as any
// background response the client left; the retry's hold is released as a replay. Before, the
// retry was charged 0.27 too.
func TestRetriedBackgroundResponseIsPaidOnce(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, _ := newFakeOpenAIResponses(t)
	provider := newIdempotentUpstream(fake, true)
	up := startFake(t, provider)
	base, g := startSimGateway(t, toolImagesCaddyfile, map[string]string{"storage": "storage badger " + t.TempDir(), "up_url": up.URL})
	keysEnv{g: g, base: base}.credit(t, "rimages", "100", "rimages-retried")
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-rimages"), option.WithMaxRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := drawParams("draw 1", responses.ToolImageGenerationParam{Size: "1024x1024", Quality: "high"}, 1)
	params.Background = openai.Bool(true)
	resp, err := client.Responses.New(ctx, params, option.WithHeader("Idempotency-Key", "stainless-node-retry-3f7a"))
	if err != nil || resp.ID == "" || resp.Status != "queued" {
		t.Fatalf("create = %+v, %v", resp, err)
	}
	if served, replayed := provider.counts(); served != 1 || replayed != 1 {
		t.Fatalf("the provider served %d creates and replayed %d; want 1 and 1 (the SDK's retry)", served, replayed)
	}
	awaitBalance(t, g, "rimages", "99.73", "0")
	if n := replayReleases(t, g, "rimages"); n != 1 {
		t.Fatalf("%d releases of a replay's hold in the ledger, want 1", n)
	}
}

// TestReplayNeedsTheOneKeyItRecorded: against a provider that answers every video create with
// one id, a create is a replay only when it sends the recorded create's Idempotency-Key, once:
// sent twice (the same value or two) it is no key, and the create is refused 400 invalid_request
// before any hold; under another name that Caddy drops (Idempotency_Key) the create reaches the
// provider and is charged. The name's letter case is no other name (HTTP folds it), so a create
// that sends the key as IDEMPOTENCY-KEY is the replay that shows the rule is on: the gateway
// answers it with the first create's kept answer, without the provider and without a hold: 0.8
// for the video, 0.8 for the one under another name.
func TestReplayNeedsTheOneKeyItRecorded(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	up, log := reusingVideosUpstream(t)
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "5", "replay-rule-1")
	create := func(model string, header map[string][]string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/videos",
			strings.NewReader(`{"model":"`+model+`","prompt":"a lighthouse at dusk","seconds":"8","size":"1280x720"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		for name, values := range header {
			req.Header[name] = values
		}
		if r := do(t, req); r.status != http.StatusOK || r.field("id") != "video_reused" {
			t.Fatalf("create with %v = %d %s", header, r.status, r.body)
		}
	}
	create("sora-2", map[string][]string{"Idempotency-Key": {"order-7"}})
	awaitBalance(t, g, "filmmakers", "4.2", "0.8") // carried by the video's record
	for _, keys := range [][]string{{"order-7", "order-7"}, {"order-7", "order-8"}} {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/videos",
			strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"8","size":"1280x720"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header["Idempotency-Key"] = keys
		if r := do(t, req); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "invalid_request") {
			t.Fatalf("create with the key %q = %d %s, want 400 invalid_request", keys, r.status, r.body)
		}
	}
	create("sora-2", map[string][]string{"Idempotency_Key": {"order-7"}})
	awaitBalance(t, g, "filmmakers", "3.4", "0.8")
	if n := replayReleases(t, g, "filmmakers"); n != 0 {
		t.Fatalf("%d releases noted as a replay, want 0", n)
	}
	create("sora-2", map[string][]string{"IDEMPOTENCY-KEY": {"order-7"}})
	awaitBalance(t, g, "filmmakers", "3.4", "0.8")
	if n := holdsTaken(t, g, "filmmakers"); n != 2 {
		t.Fatalf("%d holds in the ledger, want 2: the refused creates and the replay (the same key in capitals) hold nothing", n)
	}
	if n := len(log.matching("POST", "/v1/videos")); n != 2 {
		t.Fatalf("the provider saw %d creates, want 2: the refused creates and the replay never reach it", n)
	}
}
