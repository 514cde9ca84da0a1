package videotask

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/storage"
)

// listUpstream is the simulator (tasks stay queued) whose task list answers as listAnswer says:
// 0 passes the list to the simulator, -1 lists a task that was not asked for (the filter is
// ignored), any other value is the status of an empty answer.
type listUpstream struct {
	*fakeUpstream
	listAnswer     atomic.Int64
	lists, singles atomic.Int64
}

func newListUpstream(t *testing.T) *listUpstream {
	u := &listUpstream{}
	sim := simulator.New()
	sim.QueuedFor, sim.RunningFor = time.Hour, time.Hour
	u.fakeUpstream = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, rest, _ := strings.Cut(r.URL.Path, "/contents/generations/tasks")
		if r.Method == http.MethodGet && strings.Trim(rest, "/") == "" {
			u.lists.Add(1)
			switch a := u.listAnswer.Load(); a {
			case 0:
			case -1:
				io.WriteString(w, `{"items":[{"id":"cgt-not-asked-for","status":"queued"}],"total":1}`)
				return
			default:
				w.WriteHeader(int(a))
				return
			}
		} else if r.Method == http.MethodGet {
			u.singles.Add(1)
		}
		sim.ServeHTTP(w, r)
	})
	return u
}

// batchOf creates n tasks on h and returns their records and the upstream they are bound to.
func batchOf(t *testing.T, h *Handler, n int) (*providers.Upstream, []storage.Task) {
	t.Helper()
	return tasksOf(t, h, "m", n)
}

// refreshCounting runs one batched refresh and returns the list and single reads it made.
func refreshCounting(t *testing.T, h *Handler, u *listUpstream, p *providers.Upstream, tasks []storage.Task) (lists, singles int64) {
	t.Helper()
	l, s := u.lists.Load(), u.singles.Load()
	h.refreshBatch(context.Background(), p, tasks, nil, nil)
	return u.lists.Load() - l, u.singles.Load() - s
}

// A list answer that proves the provider cannot filter by id (405, an ignored filter) has the
// upstream's tasks read one at a time, and its list is tried again after batchRetryAfter; any
// other refusal, a 404 included, fails that one batch only: its tasks are read one by one, except
// after a 429, which pauses the upstream (no single reads).
func TestBatchingOffOnlyWhenTheListLacksTheFilter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   int64
		turnsOff bool
	}{
		{"405", http.StatusMethodNotAllowed, true},
		{"404", http.StatusNotFound, false},
		{"ignored filter", -1, true},
		{"400", http.StatusBadRequest, false},
		{"500", http.StatusInternalServerError, false},
		{"429", http.StatusTooManyRequests, false},
	} {
		wantSingles := int64(3)
		if tc.answer == http.StatusTooManyRequests {
			wantSingles = 0
		}
		t.Run(tc.name, func(t *testing.T) {
			at := time.Now()
			u := newListUpstream(t)
			h := newHandler(t, u.URL, nil)
			h.Now = clockAt(&at)
			h.Client.Timeout = 10 * time.Second
			p, tasks := batchOf(t, h, 3)

			u.listAnswer.Store(tc.answer)
			if lists, singles := refreshCounting(t, h, u, p, tasks); lists != 1 || singles != wantSingles {
				t.Fatalf("refused list: %d list calls and %d single reads, want 1 and %d", lists, singles, wantSingles)
			}
			u.listAnswer.Store(0) // the list works from now on
			lists, singles := refreshCounting(t, h, u, p, tasks)
			if tc.turnsOff && (lists != 0 || singles != 3) {
				t.Fatalf("after the refusal: %d list calls and %d single reads, want one read per task", lists, singles)
			}
			if !tc.turnsOff && (lists != 1 || singles != 0) {
				t.Fatalf("after a passing refusal: %d list calls and %d single reads, want one list call", lists, singles)
			}
			at = at.Add(batchRetryAfter - time.Second)
			if lists, _ := refreshCounting(t, h, u, p, tasks); tc.turnsOff && lists != 0 {
				t.Fatalf("list tried again %v after the refusal", batchRetryAfter-time.Second)
			}
			at = at.Add(time.Second)
			if lists, singles := refreshCounting(t, h, u, p, tasks); lists != 1 || singles != 0 {
				t.Fatalf("%v after the refusal: %d list calls and %d single reads, want one list call", batchRetryAfter, lists, singles)
			}
		})
	}
}

// What one Handler learnt about an upstream's list is its own: another Handler (the config after
// a reload) asks the list again.
func TestBatchingStateIsPerHandler(t *testing.T) {
	u := newListUpstream(t)
	h := newHandler(t, u.URL, nil)
	h.Client.Timeout = 10 * time.Second
	p, tasks := batchOf(t, h, 3)
	u.listAnswer.Store(http.StatusMethodNotAllowed)
	refreshCounting(t, h, u, p, tasks)
	u.listAnswer.Store(0)
	if lists, _ := refreshCounting(t, h, u, p, tasks); lists != 0 {
		t.Fatalf("the list was asked again right after a 405")
	}
	other := &Handler{Catalog: h.Catalog, Store: h.Store, Client: h.Client, Logger: zap.NewNop()}
	if lists, singles := refreshCounting(t, other, u, p, tasks); lists != 1 || singles != 0 {
		t.Fatalf("another handler: %d list calls and %d single reads, want one list call", lists, singles)
	}
}

// TestBatchedFinishReleasesOnce: several watchers' batches and clients' reads see the same tasks
// fail at once, all from the same stale records. Each task's slot and quota are given back once,
// by whoever stored the finish, and each record is written once: the batch's single write of
// many records keeps the compare-and-set of each.
func TestBatchedFinishReleasesOnce(t *testing.T) {
	up := newSimUpstream(t, 0, 0, true)
	h := newHandler(t, up.URL, nil)
	h.Client.Timeout = 10 * time.Second
	const n = 6
	ids := createFailingTasks(t, h, n)
	if active, used := counters(t, h.Store); active != n || used != n {
		t.Fatalf("after %d creates: active %d, quota used %d", n, active, used)
	}
	ctx := context.Background()
	stale, err := h.Store.ReadTasks(ctx, ids)
	if err != nil || len(stale) != n {
		t.Fatalf("ReadTasks = %d, %v", len(stale), err)
	}
	p, ok := h.boundUpstream(stale[0])
	if !ok {
		t.Fatal("no upstream")
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			<-start
			if calls, open := h.refreshBatch(ctx, p, stale, &answerMemo{}, nil); calls != 1 || len(open) != 0 {
				t.Errorf("refreshBatch = %d calls, open %v; want 1 call and every task finished", calls, open)
			}
		})
	}
	for _, task := range stale[:2] {
		wg.Go(func() {
			<-start
			if _, err := h.refresh(ctx, task); err != nil {
				t.Errorf("refresh: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if active, used := counters(t, h.Store); active != 0 || used != 0 {
		t.Fatalf("active %d, quota used %d after the failure was seen by 6 readers; want 0 and 0", active, used)
	}
	for _, id := range ids {
		rec, err := h.Store.Task(ctx, id)
		if err != nil || !rec.Finished || rec.Status != StatusFailed || rec.Effects != 0 || rec.Version != 3 {
			t.Fatalf("record %+v, %v; want failed and finished in one write, its effects recorded done in one more (version 3)", rec, err)
		}
	}
}

// createFailingTasks gives h an accountant that refunds unsuccessful tasks, and creates n tasks
// that the simulator fails, each holding an active-task slot (n allowed) and one unit of a quota
// of 10; it returns their ids.
func createFailingTasks(t *testing.T, h *Handler, n int) []string {
	t.Helper()
	meter := accounting.NewMeter(h.Store, time.Hour, zap.NewNop())
	t.Cleanup(meter.Close)
	h.Accounting = &accounting.Accountant{Store: h.Store, Meter: meter, Prices: unitPrice(t), Now: h.Now} // the handler's clock (nil: the real one)
	quota := int64(10)
	var ids []string
	for range n {
		r := serveAs(h, http.MethodPost, createPath, `{"model":"m","content":[{"type":"text","text":"`+simulator.FailMarker+`"}]}`,
			storage.Limits{Quota: &quota, MaxActiveTasks: int64(n)})
		id, _ := decode(t, r)["id"].(string)
		if r.Code != http.StatusOK || id == "" {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		ids = append(ids, id)
	}
	return ids
}
