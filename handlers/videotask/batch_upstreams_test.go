package videotask

import (
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// twoListUpstreams is a Handler whose provider p (model m) is served by one listUpstream and
// provider q (model n) by another, with three tasks created on each.
func twoListUpstreams(t *testing.T) (h *Handler, p, q *listUpstream) {
	t.Helper()
	p, q = newListUpstream(t), newListUpstream(t)
	pURL, _ := url.Parse(p.URL + "/api/v3")
	qURL, _ := url.Parse(q.URL + "/api/v3")
	cat, err := providers.NewCatalog([]*providers.Provider{
		{Name: "p", BaseURL: pURL, APIKey: "p-secret", Models: []string{"m"}},
		{Name: "q", BaseURL: qURL, APIKey: "q-secret", Models: []string{"n"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h = &Handler{Catalog: cat, Store: openBadger(t), Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop()}
	for _, model := range []string{"m", "m", "m", "n", "n", "n"} {
		w := serve(h, http.MethodPost, createPath, `{"model":"`+model+`","content":[{"type":"text","text":"hi"}]}`)
		if id, _ := decode(t, w)["id"].(string); w.Code != http.StatusOK || id == "" {
			t.Fatalf("create with %s = %d %s", model, w.Code, w.Body)
		}
	}
	return h, p, q
}

// waitCount waits (30 s at most) until c reaches n.
func waitCount(t *testing.T, c *atomic.Int64, n int64, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d in 30 s, want %d", what, c.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// One upstream whose task list answers 405 has its own tasks read one at a time; the watcher
// keeps reading the other upstream's tasks in list calls, and a 500 from that list fails only
// the batch that met it: the next batch is a list call again.
func TestBatchingOffForOneUpstreamOnly(t *testing.T) {
	h, p, q := twoListUpstreams(t)
	p.listAnswer.Store(http.StatusMethodNotAllowed)
	runWatcher(t, &Watcher{Tasks: h, Interval: 100 * time.Millisecond, RatePerSecond: 100, Concurrency: 2})

	// q's three tasks are read in list calls, round after round, and never one by one; p's list
	// was asked once, and its tasks are read one at a time since.
	waitCount(t, &q.lists, 3, "q's list calls")
	waitCount(t, &p.singles, 6, "p's single reads")
	if got := q.singles.Load(); got != 0 {
		t.Fatalf("q's tasks were read one by one %d times though its list filters by id", got)
	}
	if got := p.lists.Load(); got != 1 {
		t.Fatalf("p's list was asked %d times; after its 405 it is not asked for %v", got, batchRetryAfter)
	}

	// A 500 from q's list: that batch is read one task at a time, and the list is asked again.
	q.listAnswer.Store(http.StatusInternalServerError)
	waitCount(t, &q.singles, 3, "q's single reads after its list failed")
	q.listAnswer.Store(0)
	after := q.lists.Load()
	waitCount(t, &q.lists, after+2, "q's list calls after the 500")
	singles := q.singles.Load()
	waitCount(t, &q.lists, after+4, "q's list calls after the 500")
	if got := q.singles.Load(); got != singles {
		t.Fatalf("q's tasks were read one by one %d more times after its list answered again", got-singles)
	}
}
