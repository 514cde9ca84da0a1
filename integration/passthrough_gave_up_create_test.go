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

// stallingFirstCreate is a provider that makes the object of its first create at once (kept by
// its Idempotency-Key, see idempotentUpstream) but answers only once release is closed, or never
// when its caller hangs up first: a video create that takes the provider longer than the
// client's timeout.
type stallingFirstCreate struct {
	up       *idempotentUpstream
	received chan struct{}
	release  chan struct{}
	once     sync.Once
}

func (s *stallingFirstCreate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	first := false
	if r.Method == http.MethodPost {
		s.once.Do(func() { first = true })
	}
	if !first {
		s.up.ServeHTTP(w, r)
		return
	}
	made := httptest.NewRecorder()
	s.up.ServeHTTP(made, r)
	close(s.received)
	select {
	case <-s.release:
	case <-r.Context().Done():
		return // the caller hung up: the object stays made, and billed
	}
	for k, v := range made.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(made.Code)
	w.Write(made.Body.Bytes())
}

// TestCreateTheClientGaveUpOnIsPaidOnce: a client gives up on a video create (its timeout) while
// the provider is still making the video, then retries with the same Idempotency-Key, as an SDK
// does. The gateway kept the first attempt's call to the provider going after the client left, so
// it read the answer, recorded the video, carrying the create's hold (0.8), and kept the answer
// for the key: the retry gets it from the gateway, never reaching the provider nor holding
// anything, and the video, settled when openai-go retrieves it completed, is paid for once: 0.8.
// Before session 30 the gateway cut the call when the client left: the first attempt was charged
// its estimate and the retry, naming a video no one had recorded, was charged again: 1.6 for one
// video.
func TestCreateTheClientGaveUpOnIsPaidOnce(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, _ := newFakeOpenAIVideos(t, "openai-operator-key")
	provider := &stallingFirstCreate{up: newIdempotentUpstream(fake, false), received: make(chan struct{}), release: make(chan struct{})}
	up := startFake(t, provider)
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "gave-up-1")
	const key = "stainless-retry-9d41"

	sendGivenUpCreate(t, base, provider, key)
	close(provider.release)
	awaitBalance(t, g, "filmmakers", "2.2", "0.8") // the first attempt's hold, carried by the video

	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	video, err := createVideo(ctx, client, "8", "1280x720", key)
	if err != nil || video.ID == "" {
		t.Fatalf("retried create = %+v, %v", video, err)
	}
	if served, replayed := provider.up.counts(); served != 1 || replayed != 0 {
		t.Fatalf("the provider served %d creates and replayed %d; want 1 and 0 (the gateway answered the retry)", served, replayed)
	}
	awaitCompleted(ctx, t, client, video.ID)
	awaitBalance(t, g, "filmmakers", "2.2", "0")
	if n := holdsTaken(t, g, "filmmakers"); n != 1 {
		t.Fatalf("%d holds in the ledger, want 1: the retry holds nothing", n)
	}
}

// failingFirstCreate is a provider that takes a create, waits for release, then fails it: it
// drops the connection without answering anything (a crash of the provider's front end), or with
// errorOnly answers 200 with only an error object (see usage.Sniffer.ErrorOnly). It made nothing.
type failingFirstCreate struct {
	received  chan struct{}
	release   chan struct{}
	errorOnly bool
}

func (f *failingFirstCreate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	close(f.received)
	<-f.release
	if f.errorOnly {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`))
		return
	}
	panic(http.ErrAbortHandler) // the connection closes before any answer
}

// TestFailedCreateTheClientGaveUpOnIsReleased: a create that the upstream fails without
// answering, or answers with only an error object, is released whether its client waited for
// it or left: the gateway waits for the upstream on its own when the client left (see
// TestCreateTheClientGaveUpOnIsPaidOnce), and sees the same failure. Before, such a create was
// charged its estimate (0.8) for nothing made when its client had left.
func TestFailedCreateTheClientGaveUpOnIsReleased(t *testing.T) {
	for _, c := range []struct {
		name              string
		leaves, errorOnly bool
	}{
		{"dropped, client stays", false, false}, {"dropped, client leaves", true, false},
		{"error only, client stays", false, true}, {"error only, client leaves", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			provider := &failingFirstCreate{received: make(chan struct{}), release: make(chan struct{}), errorOnly: c.errorOnly}
			up := startFake(t, provider)
			base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
			keysEnv{g: g}.credit(t, "filmmakers", "3", "failed-1")

			clientCtx, leave := context.WithCancel(context.Background())
			defer leave()
			type answer struct {
				r   response
				err error
			}
			done := make(chan answer, 1)
			go func() {
				req, err := http.NewRequestWithContext(clientCtx, http.MethodPost, base+"/v1/videos",
					strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"8","size":"1280x720"}`))
				if err != nil {
					done <- answer{err: err}
					return
				}
				req.Header.Set("Authorization", "Bearer mg-pass-video")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "stainless-retry-failed")
				r, err := sendRequest(req)
				done <- answer{r, err}
			}()
			select {
			case <-provider.received:
			case <-time.After(10 * time.Second):
				t.Fatal("the create never reached the provider")
			}
			if c.leaves {
				leave()
				<-done
				time.Sleep(200 * time.Millisecond) // the gateway sees the client gone
			}
			close(provider.release)
			if !c.leaves {
				if a := <-done; a.err != nil || a.r.status != http.StatusBadGateway && a.r.status != http.StatusOK {
					t.Fatalf("create = %d %s (%v)", a.r.status, a.r.body, a.err)
				}
			}
			// The request has ended once its hold has: its settlement or release is in the ledger
			// (after the credit, its first entry).
			var ends []map[string]any
			for _, e := range endedEntries(t, g, "filmmakers", 1) {
				if e["kind"] == "settle" || e["kind"] == "release" {
					ends = append(ends, e)
				}
			}
			if len(ends) != 1 || ends[0]["kind"] != "release" {
				t.Fatalf("the create's hold ended as %v; want released: the upstream made nothing", ends)
			}
			awaitBalance(t, g, "filmmakers", "3", "0")
		})
	}
}
