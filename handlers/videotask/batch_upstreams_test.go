package videotask

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/storage"
)

// twoListUpstreams is a Handler whose provider p (model m) is served by one listUpstream and
// provider q (model n) by another.
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
	return h, p, q
}

// tasksOf creates n tasks of model on h and returns their records and the upstream they are
// bound to.
func tasksOf(t *testing.T, h *Handler, model string, n int) (*providers.Upstream, []storage.Task) {
	t.Helper()
	var tasks []storage.Task
	for range n {
		w := serve(h, http.MethodPost, createPath, `{"model":"`+model+`","content":[{"type":"text","text":"hi"}]}`)
		id, _ := decode(t, w)["id"].(string)
		if w.Code != http.StatusOK || id == "" {
			t.Fatalf("create with %s = %d %s", model, w.Code, w.Body)
		}
		task, err := h.Store.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	p, ok := h.boundUpstream(tasks[0])
	if !ok {
		t.Fatalf("task %+v has no upstream", tasks[0])
	}
	return p, tasks
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

// One Handler, two upstreams: the one whose task list answers 405 has its tasks read one at a
// time from then on, while the other's are still read in one list call per batch; a 500 from
// that list fails only the batch that met it, and the next batch is a list call again.
func TestBatchingOffForOneUpstreamOnly(t *testing.T) {
	h, p, q := twoListUpstreams(t)
	pUp, pTasks := tasksOf(t, h, "m", 3)
	qUp, qTasks := tasksOf(t, h, "n", 3)
	want := func(u *listUpstream, up *providers.Upstream, tasks []storage.Task, wantLists, wantSingles int64, when string) {
		t.Helper()
		if lists, singles := refreshCounting(t, h, u, up, tasks); lists != wantLists || singles != wantSingles {
			t.Fatalf("%s: %d list calls and %d single reads, want %d and %d", when, lists, singles, wantLists, wantSingles)
		}
	}
	p.listAnswer.Store(http.StatusMethodNotAllowed)
	want(p, pUp, pTasks, 1, 3, "p's list answers 405")
	for range 2 {
		want(q, qUp, qTasks, 1, 0, "q after p's 405")
		want(p, pUp, pTasks, 0, 3, "p after its 405")
	}
	q.listAnswer.Store(http.StatusInternalServerError)
	want(q, qUp, qTasks, 1, 3, "q's list answers 500")
	q.listAnswer.Store(0)
	want(q, qUp, qTasks, 1, 0, "q after its 500")
}
