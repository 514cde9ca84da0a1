package videotask

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/storage"
)

// Watcher defaults.
const (
	DefaultWatchInterval    = 5 * time.Second
	DefaultWatchConcurrency = 8
	DefaultWatchRate        = 50
)

// Watcher polls every unfinished task so that stored statuses (lists, active-task limits) stay
// current and callbacks fire without any client polling. The next task polled is always the one
// due soonest; concurrency and upstream requests per second are bounded. A task that a client
// polled recently is not polled again before its interval has passed.
type Watcher struct {
	// Tasks does the refreshing; its store holds the watch list.
	Tasks *Handler
	// Interval between two polls of one task. Default: 5s.
	Interval time.Duration
	// Concurrency bounds simultaneous upstream polls. Default: 8.
	Concurrency int
	// RatePerSecond bounds upstream polls per second. Default: 50. The watcher keeps up with
	// about Interval × RatePerSecond unfinished tasks, or MaxRefreshBatch times as many where the
	// provider's task list reads many tasks in one call.
	RatePerSecond float64
	// Owner names this watcher in the leases by which gateway instances sharing one store
	// divide the work: each unfinished task is read by one instance per Interval, and when an
	// instance dies the others take its tasks over within an Interval. Default: random.
	Owner string

	mu      sync.Mutex
	queue   dueQueue
	queued  map[string]bool
	wake    chan struct{}
	initOne sync.Once
}

func (w *Watcher) init() {
	w.initOne.Do(func() {
		w.queued = map[string]bool{}
		w.wake = make(chan struct{}, 1)
		if w.Interval <= 0 {
			w.Interval = DefaultWatchInterval
		}
		if w.Concurrency <= 0 {
			w.Concurrency = DefaultWatchConcurrency
		}
		if w.RatePerSecond <= 0 {
			w.RatePerSecond = DefaultWatchRate
		}
		if w.Owner == "" {
			w.Owner = storage.NewClaimToken()
		}
	})
}

// Watch schedules the first poll of a new task. (The store keeps the list of unfinished tasks
// that Run starts from, so nothing is lost on a restart.)
func (w *Watcher) Watch(t storage.Task) {
	w.init()
	w.schedule(t.ID, now().Add(w.Interval))
}

func (w *Watcher) schedule(id string, due time.Time) {
	w.mu.Lock()
	if !w.queued[id] {
		w.queued[id] = true
		heap.Push(&w.queue, dueTask{id: id, due: due})
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run polls until stop is closed. It starts from the watch list in the store and reads it again
// every Interval, so unfinished tasks are watched again after a restart, and tasks created by
// other instances sharing the store (or left by one that died) are watched too.
func (w *Watcher) Run(stop <-chan struct{}) {
	w.init()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { w.rescan(ctx) })
	limiter := rate.NewLimiter(rate.Limit(w.RatePerSecond), max(1, w.Concurrency))
	sem := make(chan struct{}, w.Concurrency)
	for {
		ids, wait := w.next(MaxRefreshBatch)
		if len(ids) == 0 {
			timer := time.NewTimer(wait)
			select {
			case <-stop:
				timer.Stop()
				return
			case <-w.wake:
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		if limiter.Wait(ctx) != nil {
			return
		}
		select {
		case sem <- struct{}{}:
		case <-stop:
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			// The first upstream call took the token above; calls beyond it (tasks read one by
			// one) take theirs afterwards, which slows the next batches down.
			if extra := w.poll(ctx, ids) - 1; extra > 0 {
				if err := limiter.WaitN(ctx, min(extra, max(1, w.Concurrency))); err != nil {
					return
				}
			}
		})
	}
}

// rescan schedules every unfinished task of the store, now and then every Interval.
func (w *Watcher) rescan(ctx context.Context) {
	ticker := time.NewTicker(w.Interval)
	defer ticker.Stop()
	for {
		start := now()
		err := w.Tasks.Store.UnfinishedTasks(ctx, func(id string) bool {
			w.schedule(id, start)
			return ctx.Err() == nil
		})
		if err != nil && ctx.Err() == nil {
			w.Tasks.Logger.Error("reading the unfinished tasks", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// next pops up to n due tasks, soonest first; when none is due it says how long to wait.
func (w *Watcher) next(n int) ([]string, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queue.Len() == 0 {
		return nil, time.Minute
	}
	if wait := time.Until(w.queue[0].due); wait > 0 {
		return nil, wait
	}
	var ids []string
	for len(ids) < n && w.queue.Len() > 0 && !w.queue[0].due.After(now()) {
		t := heap.Pop(&w.queue).(dueTask)
		delete(w.queued, t.id)
		ids = append(ids, t.id)
		metrics.RefreshLag(now().Sub(t.due))
	}
	return ids, 0
}

// poll refreshes the tasks whose lease this watcher wins, in batches per upstream (the one that
// created each task), schedules
// their next polls, and drops those that have finished. It returns the upstream calls it made.
func (w *Watcher) poll(ctx context.Context, ids []string) int {
	byUpstream := map[*providers.Upstream][]storage.Task{}
	claimed := make([]storage.Task, len(ids))
	held := make([]bool, len(ids))
	forEach(len(ids), func(i int) { claimed[i], held[i] = w.claim(ctx, ids[i]) })
	for i, id := range ids {
		t, ok := claimed[i], held[i]
		if !ok {
			continue
		}
		u, found := w.Tasks.boundUpstream(t)
		if !found {
			// Finished by refresh: its upstream left the config.
			if _, err := w.Tasks.refreshLogged(ctx, t); err != nil && ctx.Err() == nil {
				w.schedule(id, now().Add(w.Interval))
			}
			continue
		}
		byUpstream[u] = append(byUpstream[u], t)
	}
	calls := 0
	for u, tasks := range byUpstream {
		n, open := w.Tasks.refreshBatch(ctx, u, tasks)
		calls += n
		if ctx.Err() != nil {
			return calls // stopping: the next watcher starts from the store's list
		}
		w.extendLeases(ctx, open)
		next := now().Add(w.Interval)
		for _, id := range open {
			w.schedule(id, next)
		}
	}
	return calls
}

// extendLeases starts the watch leases of tasks just read afresh, so that no instance reads
// them again within an Interval of the read itself: a lease taken at claim time could run out
// soon after a read that came late in a slow batch.
func (w *Watcher) extendLeases(ctx context.Context, ids []string) {
	forEach(len(ids), func(i int) {
		err := w.Tasks.Store.RenewLease(ctx, "poll/"+ids[i], w.Owner, now(), w.Interval)
		if err != nil && !errors.Is(err, storage.ErrLeaseLost) && ctx.Err() == nil {
			w.Tasks.Logger.Warn("extending a watch lease", zap.String("task_id", ids[i]), zap.Error(err))
		}
	})
}

// claim decides whether this watcher reads task id now: the task is still unfinished, nobody
// read it in the last half interval, and this watcher holds its lease for this interval (so
// that of several instances sharing the store, one reads it). Otherwise the task is scheduled
// again, or dropped when it has finished.
func (w *Watcher) claim(ctx context.Context, id string) (storage.Task, bool) {
	t, err := w.Tasks.Store.Task(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !t.Unfinished()) {
		return t, false
	}
	if err != nil {
		w.schedule(id, now().Add(w.Interval))
		return t, false
	}
	if last := time.Unix(0, t.RefreshedAt); now().Sub(last) < w.Interval/2 {
		w.schedule(id, last.Add(w.Interval)) // a client (or another instance) read it recently
		return t, false
	}
	// The lease is kept for the interval, not released after the read: of all the gateways that
	// share the store, one reads the task, and none again before the interval has passed.
	held, err := w.Tasks.Store.AcquireLease(ctx, "poll/"+id, w.Owner, now(), w.Interval)
	if err != nil || !held {
		if err != nil && ctx.Err() == nil {
			w.Tasks.Logger.Error("taking a watch lease", zap.String("task_id", id), zap.Error(err))
		}
		w.schedule(id, now().Add(w.Interval))
		return t, false
	}
	return t, true
}

// storeParallelism bounds the store calls one batch makes at once; concurrent calls share round
// trips (the Redis client pipelines them).
const storeParallelism = 16

// forEach calls fn(0) … fn(n-1), up to storeParallelism at once, and waits for them.
func forEach(n int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	sem := make(chan struct{}, storeParallelism)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// dueTask is a task and when it is next due.
type dueTask struct {
	id  string
	due time.Time
}

// dueQueue is a min-heap of tasks by due time.
type dueQueue []dueTask

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueTask)) }
func (q *dueQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	*q = old[:len(old)-1]
	return t
}
