package videotask

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// pacedUpstream is a provider's task API, Ark's or DashScope's (through its adaptor), that
// counts the reads it answers; while throttle is set, its next create or read answers 429 with
// throttle as its Retry-After.
type pacedUpstream struct {
	mu       sync.Mutex
	reads    int
	created  int
	throttle string
}

func (p *pacedUpstream) readCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

// throttled reports a 429 armed and not yet answered.
func (p *pacedUpstream) throttled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.throttle != ""
}

func (p *pacedUpstream) throttleNext(retryAfter string) {
	p.mu.Lock()
	p.throttle = retryAfter
	p.mu.Unlock()
}

func (p *pacedUpstream) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Method == http.MethodGet {
		p.reads++
	}
	if p.throttle != "" {
		w.Header().Set("Retry-After", p.throttle)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"code":"RateLimitExceeded","message":"slow down"}}`)
		p.throttle = ""
		return
	}
	dash := strings.HasPrefix(r.URL.Path, "/api/v1/")
	switch {
	case r.Method == http.MethodPost && dash:
		p.created++
		fmt.Fprintf(w, `{"output":{"task_id":"ds-%d","task_status":"PENDING"},"request_id":"r"}`, p.created)
	case r.Method == http.MethodPost:
		p.created++
		fmt.Fprintf(w, `{"id":"cgt-%d"}`, p.created)
	case dash:
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		fmt.Fprintf(w, `{"output":{"task_id":%q,"task_status":"RUNNING"}}`, id)
	default:
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		fmt.Fprintf(w, `{"id":%q,"model":"m","status":"running","created_at":1,"updated_at":1,"content":{}}`, id)
	}
}

// newPacedHandler is the handler of one provider (model "m") with one upstream at max_rps 5,
// speaking protocol ("" for Ark's), whose clock and health board's clock are *now.
func newPacedHandler(t *testing.T, up *pacedUpstream, protocol string, now *time.Time) (*Handler, *providers.Upstream) {
	path := "/api/v3"
	if protocol == adaptor.DashScope {
		path = "/api/v1"
	}
	return newHandlerBefore(t, up.serve, protocol, path, 5, now)
}

// newHandlerBefore is the handler of one provider (model "m", protocol) with one upstream at
// maxRPS (0: unbounded) served by serve under path, whose clock and health board's clock are
// *now.
func newHandlerBefore(t *testing.T, serve http.HandlerFunc, protocol, path string, maxRPS float64, now *time.Time) (*Handler, *providers.Upstream) {
	t.Helper()
	srv := httptest.NewServer(serve)
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + path)
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", Protocol: protocol, Models: []string{"m"},
		Upstreams: []*providers.Upstream{{Name: "a", BaseURL: base, APIKey: "upstream-secret", MaxRPS: maxRPS}}}})
	if err != nil {
		t.Fatal(err)
	}
	board := providers.NewBoard()
	board.Now = clockAt(now)
	cat.WithHealth(board)
	p, _ := cat.Provider("p")
	h := &Handler{Catalog: cat, Store: openBadger(t), Client: &http.Client{Timeout: 5 * time.Second},
		RefreshInterval: time.Nanosecond, Now: clockAt(now), Logger: zap.NewNop()}
	return h, p.Upstreams[0]
}

// serveAccount sends a request to h as account.
func serveAccount(h *Handler, account, method, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k-" + account, Account: account}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A create met by a 429 backs its account off the upstream for the Retry-After, and does not
// pause the upstream's reads: providers limit creates and reads apart, and another account's
// poll of a task on that upstream still reads it.
func TestCreate429BacksTheAccountOffButNotTheReads(t *testing.T) {
	for _, protocol := range []string{"", adaptor.DashScope} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			up := &pacedUpstream{}
			now := time.Unix(1_800_000_000, 0)
			h, u := newPacedHandler(t, up, protocol, &now)
			w := serveAccount(h, "bob", "POST", createPath, createBody)
			if w.Code != 200 {
				t.Fatalf("create: %d %s", w.Code, w.Body)
			}
			bobTask := decode(t, w)["id"].(string)
			now = now.Add(10 * time.Second)

			up.throttleNext("7")
			if w := serveAccount(h, "acme", "POST", createPath, createBody); w.Code != http.StatusTooManyRequests {
				t.Fatalf("create met by a 429: %d %s", w.Code, w.Body)
			}
			if got := u.CoolingUntil("acme"); got.Before(now.Add(7 * time.Second)) {
				t.Fatalf("account backs off for %v, want at least the create's Retry-After, 7s", got.Sub(now))
			}
			if got := u.PausedUntil(); got.After(now) {
				t.Fatalf("upstream reads paused for %v by a create's 429", got.Sub(now))
			}
			now = now.Add(time.Second) // past max_rps's next token, within the 7 s Retry-After
			if w := serveAccount(h, "bob", "GET", createPath+"/"+bobTask, ""); w.Code != 200 || up.readCount() != 1 {
				t.Fatalf("poll after another account's create met a 429: %d %s, %d reads; want one read", w.Code, w.Body, up.readCount())
			}
		})
	}
}

// TestUpstreamMaxRPSAndBackoff: 15 unfinished tasks of two accounts, each polled every 50ms,
// would be read 300 times a second; the upstream's max_rps 5 holds the reads to 5 a second (and
// the burst of one). After the upstream's 429 with Retry-After: 2, nothing reads it (no task of
// either account, not only the account whose read met the 429) for those 2 seconds; then the
// reads resume. The clock is the handler's and the health board's, stepped by the test.
func TestUpstreamMaxRPSAndBackoff(t *testing.T) {
	up := &pacedUpstream{}
	now := time.Unix(1_800_000_000, 0)
	h, u := newPacedHandler(t, up, "", &now)
	type task struct{ id, account string }
	var tasks []task
	for i := range 15 {
		account := []string{"alice", "bob"}[i%2] // a 429 pauses the upstream, not one account
		w := serveAccount(h, account, "POST", createPath, createBody)
		if w.Code != 200 {
			t.Fatalf("create: %d %s", w.Code, w.Body)
		}
		tasks = append(tasks, task{decode(t, w)["id"].(string), account})
	}
	now = now.Add(5 * time.Second) // the creates count too: they are paid back by now
	const step = 50 * time.Millisecond
	// pollFor polls every task every step for d, and returns the reads that went upstream at
	// each step.
	pollFor := func(d time.Duration) (reads []int) {
		for range int(d / step) {
			now = now.Add(step)
			before := up.readCount()
			for _, tk := range tasks {
				serveAccount(h, tk.account, "GET", createPath+"/"+tk.id, "")
			}
			reads = append(reads, up.readCount()-before)
		}
		return reads
	}
	sum := func(reads []int) (n int) {
		for _, r := range reads {
			n += r
		}
		return n
	}
	reads := pollFor(3 * time.Second)
	if n := sum(reads); n < 15 || n > 16 {
		t.Fatalf("%d reads in 3s at max_rps 5, want 15 (and the burst of 1): %v", n, reads)
	}
	perSecond := int(time.Second / step)
	for i := range len(reads) - perSecond + 1 {
		if n := sum(reads[i : i+perSecond]); n > 6 {
			t.Fatalf("%d reads within a second from %v", n, time.Duration(i)*step)
		}
	}

	up.throttleNext("2")
	met := pollFor(time.Second)
	at := -1
	for i, r := range met {
		if r > 0 {
			at = i
			break
		}
	}
	if at < 0 || up.throttled() {
		t.Fatalf("no read came to meet the 429: %v", met)
	}
	if got, want := u.PausedUntil(), now.Add(-time.Duration(len(met)-1-at)*step+2*time.Second); !got.Equal(want) {
		t.Fatalf("paused until %v, want 2s after the read that met the 429 (%v)", got, want)
	}
	if n := sum(met[at+1:]); n != 0 {
		t.Fatalf("%d reads within the 2s pause after the 429: %v", n, met)
	}
	// The pause ends 2s after the 429 read, at step at of met: the rest of the 2s read nothing,
	// the step after it reads again.
	rest := pollFor(2*time.Second - time.Duration(len(met)-at)*step)
	if n := sum(rest); n != 0 {
		t.Fatalf("%d reads within the 2s pause after the 429: %v", n, rest)
	}
	if resumed := pollFor(step); sum(resumed) != 1 {
		t.Fatalf("reads right after the pause: %v, want one (max_rps 5's burst)", resumed)
	}
}

// TestWatcherPacesAndPausesReads: the watcher's batch of 15 tasks of one upstream at max_rps 5
// goes out as the upstream's pace allows (the burst of one now), the rest put off one 1/max_rps
// apart; after a 429 with Retry-After: 2 none goes out, and all are put off from the pause's end.
// The clock is the health board's, stepped by the test.
func TestWatcherPacesAndPausesReads(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, u := newPacedHandler(t, &pacedUpstream{}, adaptor.DashScope, &now)
	w := &Watcher{Tasks: h, tracked: map[string]bool{}}
	var batch []storage.Task
	for i := range 15 {
		batch = append(batch, storage.Task{ID: fmt.Sprintf("cgt-%d", i), UpstreamID: fmt.Sprintf("ds-%d", i)})
	}
	due := func() map[string]time.Duration {
		out := map[string]time.Duration{}
		for w.queue.Len() > 0 {
			d := w.queue.pop()
			out[d.id] = d.due.Sub(now)
		}
		return out
	}
	if now := w.paced(u, batch); len(now) != 1 || now[0].ID != "cgt-0" {
		t.Fatalf("read now: %d tasks, want the burst of one", len(now))
	}
	later := due()
	for i := 1; i < 15; i++ {
		if got, want := later[fmt.Sprintf("cgt-%d", i)], time.Duration(i)*200*time.Millisecond; got != want {
			t.Fatalf("cgt-%d put off by %v, want %v (one 1/max_rps apart)", i, got, want)
		}
	}

	now = now.Add(10 * time.Second)
	u.Throttled(2 * time.Second)
	now = now.Add(1999 * time.Millisecond)
	if got := w.paced(u, batch); len(got) != 0 {
		t.Fatalf("%d reads within the 2s pause", len(got))
	}
	paused := due()
	for i := range 15 {
		if got, want := paused[fmt.Sprintf("cgt-%d", i)], time.Millisecond+time.Duration(i)*200*time.Millisecond; got != want {
			t.Fatalf("cgt-%d put off by %v, want %v (from the pause's end, 1ms on, one 1/max_rps apart)", i, got, want)
		}
	}
	now = now.Add(time.Millisecond)
	if got := w.paced(u, batch); len(got) != 1 {
		t.Fatalf("%d reads at the pause's end, want the burst of one", len(got))
	}
}
