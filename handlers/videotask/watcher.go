package videotask

import (
	"context"
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
// polled recently is not polled again before its interval has passed (a client poll through
// another instance counts only at the polls that read the record, see below).
//
// Gateway instances sharing one store divide the work by shards: the unfinished tasks are split
// into Shards by a hash of their id, and each shard is watched by one instance at a time, under
// a short lease (three ticks) that it renews every tick, a tenth of an Interval (at most ten
// times a second). The instances find each other through heartbeats in the store and divide
// the shards evenly; when one dies, its leases and heartbeat run out and the others take its
// shards over within 0.4 of an Interval. A task is read by one instance per Interval across
// these changes of hands: before reading tasks from their upstream, the holder records in the
// shard's read log, under its lease, when it reads them, and whoever takes the shard next reads
// each task an Interval after its recorded read (the read log's record is one script per batch
// on Redis, and in memory on Badger). A poll starts from the record as this watcher last saw it,
// without reading it from the store: as the create stored it, at the first poll of a task created
// through this instance; as this watcher's last poll read or wrote it, at later polls of a task
// whose answer it read (see records). Every maxHeldPolls-th poll of a task reads its record
// (one batched read), and so do the polls of the others. Unchanged tasks are not written; the
// changed tasks of a batch are written in one store write (storage.UpdateTasksFrom), each by
// its own compare-and-set on the version the watcher saw, which fails, and re-reads the record,
// when another instance or a client changed it meanwhile.
type Watcher struct {
	// Tasks does the refreshing; its store holds the watch list.
	Tasks *Handler
	// Interval between two polls of one task. Default: 5s.
	Interval time.Duration
	// Concurrency bounds the watcher's reads of upstreams in flight beyond each upstream's first,
	// watcher-wide (a read being a batch of one upstream's due tasks), and its polls preparing
	// them. Each upstream may always have one read in flight, and an upstream's share of the rest
	// shrinks with the number of upstreams that have work (see watch_upstreams.go), so that
	// upstreams whose reads are slow leave the others' tasks read on time. Default: 8.
	Concurrency int
	// RatePerSecond bounds upstream polls per second. Default: 50. The watcher keeps up with
	// about Interval × RatePerSecond unfinished tasks, or MaxRefreshBatch times as many where the
	// provider's task list reads many tasks in one call.
	RatePerSecond float64
	// Owner names this watcher in the shard leases and heartbeats by which gateway instances
	// sharing one store divide the work. Default: random.
	Owner string
	// Shards is how many shards the unfinished tasks are divided into. Every watcher sharing a
	// store must use the same number. Default: DefaultWatchShards.
	Shards int

	mu sync.Mutex
	// queue holds the scheduled tasks by due time; tracked the ids scheduled or being read.
	queue   dueQueue
	tracked map[string]bool
	// held maps the shards this watcher holds to until when their leases run (by its clock);
	// leaving holds those it is handing over (not read any more, freed once their reads in
	// flight are done).
	held    map[int]time.Time
	leaving map[int]bool
	// readFrom holds back the reads of shards being taken (or whose read log could not be
	// read); notBefore the tasks of taken shards that their last holder read less than an
	// Interval ago, until an Interval after that read.
	readFrom  map[int]time.Time
	notBefore map[string]time.Time
	// reading counts the reads in flight per shard; trimmed says when each shard's read log was
	// last trimmed from here.
	reading map[int]int
	trimmed map[int]time.Time
	// upstreamReads counts the reads in flight of each upstream, readsInFlight all of them, and
	// upstreamDue says when each upstream last had due tasks (see startUpstream); reads waits for
	// the reads in flight, which outlive their polls.
	upstreamReads map[*providers.Upstream]int
	readsInFlight int
	upstreamDue   map[*providers.Upstream]time.Time
	reads         sync.WaitGroup
	// records holds the records of tasks as this watcher last saw them, for their next poll (at
	// most maxHeldRecords of them): the record as the create stored it, or as a poll read or
	// wrote it. spare keeps the ones that polls took, to hold the next records in (heldOf).
	records map[string]*heldRecord
	spare   []*heldRecord
	// forgotten marks the tasks whose held records forgetHeld dropped since their poll began:
	// that poll must not hold again the record it started from.
	forgotten map[string]bool
	// seen spares the comparison of unchanged answers.
	seen    answerMemo
	wake    chan struct{}
	initOne sync.Once
}

// now reads the clock of the watcher's handler (Handler.Now).
func (w *Watcher) now() time.Time { return w.Tasks.now() }

func (w *Watcher) init() {
	w.initOne.Do(func() {
		w.tracked = map[string]bool{}
		w.held = map[int]time.Time{}
		w.leaving = map[int]bool{}
		w.readFrom = map[int]time.Time{}
		w.notBefore = map[string]time.Time{}
		w.reading = map[int]int{}
		w.trimmed = map[int]time.Time{}
		w.upstreamReads = map[*providers.Upstream]int{}
		w.upstreamDue = map[*providers.Upstream]time.Time{}
		w.records = map[string]*heldRecord{}
		w.forgotten = map[string]bool{}
		if w.Shards <= 0 {
			w.Shards = DefaultWatchShards
		}
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

// Watch schedules the first poll of a new task. t is the record as the store's CreateTask
// returned it (Version 1): the first poll starts from it instead of reading it again, and
// stores the upstream's answer by compare-and-set on its Version, which re-reads the record if
// anything changed it meanwhile. (A record without a Version is read at the first poll.) The
// store keeps the list of unfinished tasks that Run starts from, so nothing is lost on a
// restart. A task of a shard that another instance watches is left to that instance.
func (w *Watcher) Watch(t storage.Task) {
	w.init()
	if t.Version > 0 {
		w.mu.Lock()
		if _, tracked := w.tracked[t.ID]; tracked {
			// An id still followed from an earlier task (an upstream that hands an id out
			// again): its first poll reads the store.
			delete(w.records, t.ID)
		} else if len(w.records) < maxHeldRecords && holdable(&t) {
			w.records[t.ID] = w.heldOf(t, 0)
		}
		w.mu.Unlock()
	}
	w.schedule(t.ID, w.now().Add(w.Interval))
}

// schedule queues a task that is neither queued nor being read.
func (w *Watcher) schedule(id string, due time.Time) {
	w.mu.Lock()
	if !w.tracked[id] {
		w.tracked[id] = true
		w.queue.push(dueTask{id: id, due: due})
	}
	w.mu.Unlock()
	w.signal()
}

// reschedule queues again a task that was being read.
func (w *Watcher) reschedule(id string, due time.Time) {
	w.mu.Lock()
	w.tracked[id] = true
	w.queue.push(dueTask{id: id, due: due})
	w.mu.Unlock()
	w.signal()
}

// rescheduleAll is reschedule for several tasks due at once.
func (w *Watcher) rescheduleAll(ids []string, due time.Time) {
	if len(ids) == 0 {
		return
	}
	w.mu.Lock()
	for _, id := range ids {
		w.tracked[id] = true
		w.queue.push(dueTask{id: id, due: due})
	}
	w.mu.Unlock()
	w.signal()
}

// untrack forgets a task that was being read: it finished, or it is another watcher's.
func (w *Watcher) untrack(id string) {
	w.mu.Lock()
	delete(w.tracked, id)
	delete(w.records, id)
	delete(w.forgotten, id)
	w.mu.Unlock()
	w.seen.forget(id)
}

func (w *Watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run polls until stop is closed. It takes its share of the shards and watches their unfinished
// tasks from the store's list, which it reads again every Interval, so unfinished tasks are
// watched again after a restart, and tasks created by other instances sharing the store (or
// left by one that died) are watched too.
func (w *Watcher) Run(stop <-chan struct{}) {
	w.run(stop)
	w.leave() // after the last read: every read made is in the read logs
}

// run is Run without leaving the group: when it returns, the watcher has stopped as if its
// process had died, its leases and heartbeat left to run out.
func (w *Watcher) run(stop <-chan struct{}) {
	w.init()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	// The polls end first (they start batches), then their batches.
	defer w.reads.Wait()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { w.own(ctx) })
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
			// one) take theirs once their batches are done, which slows the next polls down.
			var mu sync.Mutex
			first := 1
			w.startPoll(ctx, ids, func(calls int) {
				mu.Lock()
				extra := calls - min(calls, first)
				first -= min(calls, first)
				mu.Unlock()
				if extra > 0 && ctx.Err() == nil {
					// An error is the watcher stopping: nothing is left to pace.
					_ = limiter.WaitN(ctx, min(extra, max(1, w.Concurrency)))
				}
			})
		})
	}
}

// rescan schedules every unfinished task of the shards this watcher holds that it does not
// watch yet (created through other instances), every Interval. (own schedules those of a shard
// as soon as it takes it.)
func (w *Watcher) rescan(ctx context.Context) {
	ticker := time.NewTicker(w.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if shards := w.heldShards(); len(shards) > 0 {
			w.watchShards(ctx, shards)
		}
	}
}

// next pops up to n due tasks, soonest first (they stay tracked while they are read); when none
// is due it says how long to wait.
func (w *Watcher) next(n int) ([]string, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queue.Len() == 0 {
		return nil, time.Minute
	}
	if wait := w.queue[0].due.Sub(w.now()); wait > 0 {
		return nil, wait
	}
	var ids []string
	for len(ids) < n && w.queue.Len() > 0 && !w.queue[0].due.After(w.now()) {
		t := w.queue.pop()
		if at, ok := w.notBefore[t.id]; ok {
			if at.After(t.due) {
				// Read by the shard's previous holder less than an Interval ago.
				w.queue.push(dueTask{id: t.id, due: at})
				continue
			}
			delete(w.notBefore, t.id)
		}
		ids = append(ids, t.id)
		metrics.RefreshLag(w.now().Sub(t.due))
	}
	return ids, 0
}

// poll refreshes the tasks of the shards this watcher may read now, in batches per upstream
// (the one that created each task; the upstreams' batches at once, each within its share of the
// reads in flight, see startUpstream), schedules their next polls, and drops those that have
// finished or are another watcher's. It returns once the batches are started: each batch ends on
// its own (w.reads), and then tells done the upstream calls it made. It answers how many batches
// it started.
func (w *Watcher) startPoll(ctx context.Context, ids []string, done func(calls int)) (batches int) {
	mine, late, others := w.startReads(ids)
	for _, id := range late {
		// The lease's renewal is late: try again when it may have come.
		w.reschedule(id, w.now().Add(w.ownershipTick()/2))
	}
	for _, id := range others {
		w.untrack(id)
	}
	if len(mine) == 0 {
		return 0
	}
	// The reads of the tasks that no batch takes end with the poll; a batch's end with it.
	batched := map[string]bool{}
	defer func() {
		var rest []string
		for _, id := range mine {
			if !batched[id] {
				rest = append(rest, id)
			}
		}
		w.doneReads(rest)
	}()
	// The reads are recorded under the shards' leases before they are made, alongside the read
	// of the records (the Redis client pipelines the two), at the time by which they will have
	// gone out (noteAgain records again those that would go out later).
	at := w.now().Add(w.readSlack())
	var lost []int
	var noteErr error
	groups := w.readGroups(mine)
	known, polls, unknown := w.takeHeld(mine)
	tasks, err := known, error(nil)
	if len(unknown) == 0 {
		lost, noteErr = w.Tasks.Store.NoteReads(ctx, w.Owner, at, w.readKeep(), groups)
	} else {
		var wg sync.WaitGroup
		wg.Go(func() { lost, noteErr = w.Tasks.Store.NoteReads(ctx, w.Owner, at, w.readKeep(), groups) })
		var read []storage.Task
		read, err = w.Tasks.Store.ReadTasks(ctx, unknown)
		tasks = append(tasks, read...)
		wg.Wait()
	}
	if err == nil {
		err = noteErr
	}
	var skip map[string]skipReason
	if err == nil {
		skip = w.dropLost(groups, lost)
		at, err = w.noteAgain(ctx, at, groups, skip)
	}
	if err != nil {
		if ctx.Err() == nil {
			w.Tasks.Logger.Error("reading watched tasks", zap.Error(err))
		}
		for _, id := range mine {
			w.reschedule(id, w.now().Add(w.Interval))
		}
		w.holdAgain(known, polls)
		return 0
	}
	found := make(map[string]bool, len(tasks))
	byUpstream := map[*providers.Upstream][]storage.Task{}
	var finishing []storage.Task
	for _, t := range tasks {
		found[t.ID] = true
		switch skip[t.ID] {
		case skipLost:
			w.untrack(t.ID) // another watcher's now
			continue
		case skipLate:
			w.reschedule(t.ID, w.now().Add(w.ownershipTick()/2))
			continue
		}
		if !t.Unfinished() {
			if t.Effects != 0 {
				// Finished, and its finish's effects are still to do (finish_effects.go).
				if now, due := w.Tasks.finishEffectsDue(t); !now {
					w.reschedule(t.ID, due)
				} else {
					finishing = append(finishing, t)
				}
				continue
			}
			w.untrack(t.ID)
			continue
		}
		if keepPending(t) {
			// Succeeded upstream; its result's copy is started, taken over or retried here.
			w.Tasks.keepSoon(t)
			w.reschedule(t.ID, w.now().Add(w.Interval))
			continue
		}
		if last := time.Unix(0, t.RefreshedAt); w.now().Sub(last) < w.Interval/2 {
			w.hold([]seenRecord{{t: t}}, polls)      // unchanged by this poll
			w.reschedule(t.ID, last.Add(w.Interval)) // a client read it recently
			continue
		}
		u, ok := w.Tasks.boundUpstream(t)
		if !ok || w.Tasks.overdue(t) {
			// Finished by refresh: its upstream left the config, or it ran past the longest
			// execution time.
			if _, err := w.Tasks.refreshLogged(ctx, t, &w.seen); err != nil && ctx.Err() == nil {
				w.reschedule(t.ID, w.now().Add(w.Interval))
			} else {
				w.untrack(t.ID)
			}
			continue
		}
		due, ok := byUpstream[u]
		if !ok {
			// Room for the whole poll: a Task is some 400 bytes, and a slice grown from empty
			// would copy a batch of them seven times over.
			due = make([]storage.Task, 0, len(tasks))
		}
		byUpstream[u] = append(due, t)
	}
	for _, id := range mine {
		if !found[id] {
			w.untrack(id) // expired or deleted
		}
	}
	w.finishAll(ctx, finishing)
	// Each upstream's tasks are read beside the others', so that one slow upstream holds none of
	// the others' reads, and within its share of the reads in flight (startUpstream): past it,
	// its tasks wait an Interval, their records held, and the reads stay free for the others.
	// The batches outlive the poll, so that a slow one holds a read, not a poll.
	for u, due := range byUpstream {
		if !w.startUpstream(u) {
			w.holdAgain(due, polls)
			ids := make([]string, len(due))
			for i, t := range due {
				ids[i] = t.ID
			}
			w.rescheduleAll(ids, w.now().Add(w.Interval))
			continue
		}
		ids := make([]string, len(due))
		for i, t := range due {
			ids[i] = t.ID
			batched[t.ID] = true
		}
		batches++
		w.reads.Go(func() {
			defer w.doneReads(ids)
			calls, open := w.readBatch(ctx, u, due, polls)
			w.doneUpstream(u)
			if ctx.Err() == nil { // stopping: the next watcher starts from the store's list
				w.noteSlowReads(ctx, at, open)
			}
			done(calls)
		})
	}
	return batches
}

// poll is startPoll waiting for its batches; it returns the upstream calls they made.
func (w *Watcher) poll(ctx context.Context, ids []string) int {
	ended := make(chan int, len(ids))
	calls := 0
	for range w.startPoll(ctx, ids, func(n int) { ended <- n }) {
		calls += <-ended
	}
	return calls
}

// finishAll does the pending effects of finished tasks whose winner did not (finishEffects), up
// to storeParallelism at once, from their records read again (one the watcher held may be out of
// date); a task whose effects fail again is polled again an Interval later.
func (w *Watcher) finishAll(ctx context.Context, finished []storage.Task) {
	if len(finished) == 0 {
		return
	}
	ids := make([]string, len(finished))
	for i, t := range finished {
		ids[i] = t.ID
	}
	tasks, err := w.Tasks.Store.ReadTasks(ctx, ids)
	if err != nil {
		w.rescheduleAll(ids, w.now().Add(w.Interval))
		return
	}
	for _, id := range ids {
		w.untrack(id) // done, deleted, or scheduled again below
	}
	done := make([]bool, len(tasks))
	forEach(len(tasks), func(i int) { done[i] = w.Tasks.finishEffects(ctx, tasks[i]) })
	for i, t := range tasks {
		if !done[i] {
			w.schedule(t.ID, w.now().Add(w.Interval))
		}
	}
}

// readBatch reads the due tasks of one upstream within its own max_rps and its pause after a
// 429 (the rest wait, their records held as they were), schedules the next polls of those still
// open, and returns the upstream calls made and the ids of the tasks read that are still open.
func (w *Watcher) readBatch(ctx context.Context, u *providers.Upstream, due []storage.Task, polls map[string]int) (calls int, stillOpen []string) {
	batch := w.paced(u, due)
	w.holdAgain(due[len(batch):], polls)
	if len(batch) == 0 {
		return 0, nil
	}
	seen := make([]seenRecord, 0, len(batch))
	n, open := w.Tasks.refreshBatch(withPaced(ctx), u, batch, &w.seen, func(r seenRecord) { seen = append(seen, r) })
	if ctx.Err() != nil {
		return n, nil
	}
	w.hold(seen, polls)
	w.rescheduleAll(open, w.now().Add(w.Interval))
	still := make(map[string]bool, len(open))
	for _, id := range open {
		still[id] = true
	}
	for _, t := range batch {
		if !still[t.ID] {
			w.untrack(t.ID)
		} else {
			stillOpen = append(stillOpen, t.ID)
		}
	}
	return n, stillOpen
}

// storeParallelism bounds the store calls one batch makes at once; concurrent calls share round
// trips (the Redis client pipelines them), so that a batch of changed tasks is written in a
// round trip or two.
const storeParallelism = 64

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
