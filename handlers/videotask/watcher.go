package videotask

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

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
	// about Interval × RatePerSecond unfinished tasks.
	RatePerSecond float64

	// owner names this watcher in the store's poll leases.
	owner   string
	mu      sync.Mutex
	queue   dueQueue
	queued  map[string]bool
	wake    chan struct{}
	initOne sync.Once
}

func (w *Watcher) init() {
	w.initOne.Do(func() {
		w.queued = map[string]bool{}
		w.owner = storage.NewClaimToken()
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

// Run polls until stop is closed. It starts from the watch list in the store, so unfinished
// tasks are watched again after a restart.
func (w *Watcher) Run(stop <-chan struct{}) {
	w.init()
	start := now()
	err := w.Tasks.Store.UnfinishedTasks(context.Background(), func(id string) bool {
		w.schedule(id, start)
		return true
	})
	if err != nil {
		w.Tasks.Logger.Error("reading the unfinished tasks", zap.Error(err))
	}
	limiter := rate.NewLimiter(rate.Limit(w.RatePerSecond), max(1, w.Concurrency))
	sem := make(chan struct{}, w.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	for {
		due, wait, ok := w.next()
		if !ok {
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
		wg.Add(1)
		metrics.RefreshLag(now().Sub(due.due))
		go func() {
			defer func() { <-sem; wg.Done() }()
			w.poll(ctx, due.id)
		}()
	}
}

// next pops the task due soonest if it is due; otherwise it says how long to wait.
func (w *Watcher) next() (dueTask, time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queue.Len() == 0 {
		return dueTask{}, time.Minute, false
	}
	if wait := time.Until(w.queue[0].due); wait > 0 {
		return dueTask{}, wait, false
	}
	t := heap.Pop(&w.queue).(dueTask)
	delete(w.queued, t.id)
	return t, 0, true
}

// poll refreshes one task and schedules its next poll, or drops it once it has finished.
func (w *Watcher) poll(ctx context.Context, id string) {
	t, err := w.Tasks.Store.Task(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !t.Unfinished()) {
		return
	}
	if err != nil {
		w.schedule(id, now().Add(w.Interval))
		return
	}
	if last := time.Unix(0, t.RefreshedAt); now().Sub(last) < w.Interval/2 {
		w.schedule(id, last.Add(w.Interval)) // a client polled it recently
		return
	}
	// One watcher polls a task at a time, across every gateway that shares the store.
	lease := "poll/" + id
	held, err := w.Tasks.Store.AcquireLease(ctx, lease, w.owner, now(), w.Tasks.upstreamTimeout()+time.Second)
	if err != nil || !held {
		if err != nil && ctx.Err() == nil {
			w.Tasks.Logger.Error("taking a poll lease", zap.String("task_id", id), zap.Error(err))
		}
		w.schedule(id, now().Add(w.Interval))
		return
	}
	defer func() {
		if err := w.Tasks.Store.ReleaseLease(context.WithoutCancel(ctx), lease, w.owner); err != nil {
			w.Tasks.Logger.Warn("releasing a poll lease; it ends by itself", zap.String("task_id", id), zap.Error(err))
		}
	}()
	t, err = w.Tasks.refreshOnce(ctx, t)
	switch {
	case ctx.Err() != nil: // stopping: the next watcher starts from the store's list
	case errors.Is(err, errTaskNotExist): // gone upstream; its record expires in time
	case err == nil && !t.Unfinished():
	default:
		w.schedule(id, now().Add(w.Interval))
	}
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
