package videotask

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/storage"
)

// simUpstream is the simulator behind a counter of task reads: single reads, and list reads
// with an id filter. listWorks false makes the list answer 405, like a provider without one.
type simUpstream struct {
	*fakeUpstream
	sim            *simulator.Simulator
	singles, lists atomic.Int64
	mu             sync.Mutex
	readsPerTask   map[string]int
	// reads lists every read of a task: when it reached the upstream, and the X-Watcher header
	// of the request (which watcher made it, where a test sets one).
	reads []upstreamRead
}

// upstreamRead is one read of a task that reached the upstream.
type upstreamRead struct {
	task, watcher string
	at            time.Time
}

func newSimUpstream(t *testing.T, queuedFor, runningFor time.Duration, listWorks bool) *simUpstream {
	s := &simUpstream{sim: simulator.New(), readsPerTask: map[string]int{}}
	s.sim.QueuedFor, s.sim.RunningFor = queuedFor, runningFor
	s.fakeUpstream = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, rest, _ := strings.Cut(r.URL.Path, "/contents/generations/tasks")
		if r.Method == http.MethodGet {
			at, watcher := time.Now(), r.Header.Get("X-Watcher")
			s.mu.Lock()
			switch id := strings.Trim(rest, "/"); {
			case id != "":
				s.singles.Add(1)
				s.readsPerTask[id]++
				s.reads = append(s.reads, upstreamRead{task: id, watcher: watcher, at: at})
			case r.URL.Query().Has("filter.task_ids"):
				s.lists.Add(1)
				for _, id := range r.URL.Query()["filter.task_ids"] {
					s.readsPerTask[id]++
					s.reads = append(s.reads, upstreamRead{task: id, watcher: watcher, at: at})
				}
			}
			s.mu.Unlock()
			if rest == "" && !listWorks {
				// The tasks path takes POST only: its server has no list read.
				w.Header().Set("Allow", http.MethodPost)
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
		}
		s.sim.ServeHTTP(w, r)
	})
	return s
}

func createTasks(t *testing.T, h *Handler, n int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for range n {
		w := serve(h, "POST", createPath, createBody)
		id, _ := decode(t, w)["id"].(string)
		if w.Code != 200 || id == "" {
			t.Fatalf("create = %d %s", w.Code, w.Body)
		}
		ids = append(ids, id)
	}
	return ids
}

// waitFinished waits until every task's record has finished.
func waitFinished(t *testing.T, store storage.Store, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, id := range ids {
		for {
			task, err := store.Task(context.Background(), id)
			if err == nil && !task.Unfinished() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s not finished by the watcher: %+v, %v", id, task, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func runWatcher(t *testing.T, w *Watcher) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(stop); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
}

// The watcher reads many tasks of a provider in one list call with filter.task_ids.
func TestWatcherRefreshesInBatches(t *testing.T) {
	up := newSimUpstream(t, 100*time.Millisecond, 100*time.Millisecond, true)
	h := newHandler(t, up.URL, nil)
	h.Client.Timeout = 10 * time.Second
	ids := createTasks(t, h, 250)
	runWatcher(t, &Watcher{Tasks: h, Interval: 300 * time.Millisecond, RatePerSecond: 20, Concurrency: 2})
	waitFinished(t, h.Store, ids, 60*time.Second)
	// 250 tasks, at most 100 per call: a handful of calls per interval, far fewer than one per
	// task and read.
	reads := 0
	up.mu.Lock()
	for _, n := range up.readsPerTask {
		reads += n
	}
	up.mu.Unlock()
	// (A batch of one due task is read alone.)
	if lists, singles := up.lists.Load(), up.singles.Load(); lists == 0 || (lists+singles)*10 > int64(reads) {
		t.Fatalf("%d list calls and %d single reads for %d task reads", lists, singles, reads)
	}
}

// A provider whose list does not filter by id is read one task at a time.
func TestWatcherFallsBackToSingleReads(t *testing.T) {
	up := newSimUpstream(t, 100*time.Millisecond, 100*time.Millisecond, false)
	h := newHandler(t, up.URL, nil)
	h.Client.Timeout = 10 * time.Second
	ids := createTasks(t, h, 20)
	runWatcher(t, &Watcher{Tasks: h, Interval: 300 * time.Millisecond, RatePerSecond: 200, Concurrency: 4})
	waitFinished(t, h.Store, ids, 60*time.Second)
	if up.singles.Load() < int64(len(ids)) {
		t.Fatalf("%d single reads for %d tasks", up.singles.Load(), len(ids))
	}
}

// Two watchers on one store (two gateway instances) read each task once per interval between
// them, not once each; when one stops, the other goes on with every task.
func TestWatchersShareTheWork(t *testing.T) {
	up := newSimUpstream(t, time.Hour, time.Hour, false)
	h := newHandler(t, up.URL, nil)
	h.Client.Timeout = 10 * time.Second
	ids := createTasks(t, h, 10)
	const interval = 400 * time.Millisecond
	stopA := make(chan struct{})
	doneA := make(chan struct{})
	a := &Watcher{Tasks: h, Interval: interval, RatePerSecond: 500, Concurrency: 4, Owner: "a"}
	go func() { a.Run(stopA); close(doneA) }()
	runWatcher(t, &Watcher{Tasks: h, Interval: interval, RatePerSecond: 500, Concurrency: 4, Owner: "b"})
	start := time.Now()
	time.Sleep(8 * interval)
	close(stopA)
	<-doneA
	elapsed := time.Since(start)
	up.mu.Lock()
	for _, id := range ids {
		// One read per interval at most, plus the first, plus one for a read that was slow to
		// reach the upstream after its lease was taken.
		if n, most := up.readsPerTask[id], int(elapsed/interval)+2; n > most {
			up.mu.Unlock()
			t.Fatalf("task %s read %d times in %v by two watchers; at most %d", id, n, elapsed, most)
		}
	}
	before := map[string]int{}
	for id, n := range up.readsPerTask {
		before[id] = n
	}
	up.mu.Unlock()
	// B alone keeps reading every task.
	deadline := time.Now().Add(30 * interval)
	for _, id := range ids {
		for {
			up.mu.Lock()
			n := up.readsPerTask[id]
			up.mu.Unlock()
			if n > before[id] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s not read after watcher A stopped", id)
			}
			time.Sleep(interval / 4)
		}
	}
}

// The watcher's batched reads of tasks that did not change write nothing: the record keeps its
// version, so thousands of waiting tasks cost upstream reads, not store writes.
func TestWatcherDoesNotRewriteUnchangedTasks(t *testing.T) {
	up := newSimUpstream(t, 0, time.Hour, true) // running at once: the first read stores its answer
	h := newHandler(t, up.URL, nil)
	h.Client.Timeout = 10 * time.Second
	before := versions(t, h, createTasks(t, h, 5))
	const interval = 200 * time.Millisecond
	runWatcher(t, &Watcher{Tasks: h, Interval: interval, RatePerSecond: 100, Concurrency: 2})
	deadline := time.Now().Add(30 * time.Second)
	for up.lists.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher made %d list calls in 30 s", up.lists.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	requireWrittenOnce(t, h, before)
}

// The watcher skips comparing an answer it has seen on the same record version, but a record
// changed meanwhile (another version) is compared again once the watcher reads it, within
// maxHeldPolls polls (the polls between start from the record the watcher holds): here its
// stored answer was replaced, and a read of the unchanged upstream answer puts it back.
func TestWatcherComparesAgainAfterTheRecordChanged(t *testing.T) {
	up := newSimUpstream(t, 0, time.Hour, true) // running at once: the first read stores its answer
	h := newHandler(t, up.URL, nil)
	h.Client.Timeout = 10 * time.Second
	ids := createTasks(t, h, 3)
	ctx := context.Background()
	runWatcher(t, &Watcher{Tasks: h, Interval: 200 * time.Millisecond, RatePerSecond: 100, Concurrency: 2})
	waitLists := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for up.lists.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("the watcher made %d list calls in 30 s", up.lists.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitLists(3)
	task, err := h.Store.Task(ctx, ids[0])
	if err != nil || len(task.Result) == 0 {
		t.Fatalf("after three reads: %+v %v", task, err)
	}
	answer := task.Result
	task.Result = []byte(`{"id":"` + task.ID + `","status":"running","tampered":true}`)
	if _, err := h.Store.ReplaceTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	waitLists(up.lists.Load() + maxHeldPolls + 2)
	got, err := h.Store.Task(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Result) != string(answer) {
		t.Fatalf("after the record changed and the upstream answered as before, the record says %s; want %s", got.Result, answer)
	}
}
