package videotask

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/internal/testclock"
)

// BenchmarkRefreshBatch measures the watcher's first read of tasks just created through the
// handler (and watched, as in the gateway), the read that runs an Interval after each create
// while creates go on: one poll of MaxRefreshBatch tasks (its read log and lease check
// included) over a real Badger store, listed by id from a local fake upstream (the simulator).
// In "running" the tasks run from the start: their first answer changes each record's status
// and client answer, and each record is stored by compare-and-set. In "queued" they are still
// queued, as a task's first read usually finds it: nothing is stored (stillUnread). Each op is
// one batch; ns/task (wall, including the disk sync waits), cpu-ns/task (the whole process's
// CPU time: the upstream's share included) and allocs/task (the simulator's included) are per
// task. Run it by hand:
//
//	go test ./handlers/videotask/ -run '^$' -bench RefreshBatch -benchmem -cpu 1 -count 6
func BenchmarkRefreshBatch(b *testing.B) {
	for _, c := range []struct {
		name      string
		queuedFor time.Duration
		status    string
		version   int64 // the records' after the read
	}{
		{"running", 0, StatusRunning, 2},
		{"queued", time.Hour, StatusQueued, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			sim := simulator.New()
			sim.QueuedFor, sim.RunningFor = c.queuedFor, time.Hour
			up := newFakeUpstream(b, sim.ServeHTTP)
			h := newHandler(b, up.URL, nil)
			h.Client = &http.Client{Timeout: 30 * time.Second}
			// The watcher holds every shard for the whole run (a long interval keeps its leases).
			w := &Watcher{Tasks: h, Interval: time.Hour}
			w.init()
			ctx := context.Background()
			w.ownTickAndScan(ctx)
			h.Watcher = w // as in the gateway: each create is watched
			var ids []string
			pollCost(b, func() { ids = createBatch(b, h) }, func() {
				if calls := w.poll(ctx, ids); calls != 1 {
					b.Fatalf("poll made %d upstream calls, want 1", calls)
				}
			})
			for _, id := range ids {
				if t, err := h.Store.Task(ctx, id); err != nil || t.Version != c.version || t.Status != c.status {
					b.Fatalf("record after the refresh: %+v, %v", t, err)
				}
			}
		})
	}
}

// pollCost runs before (not measured) and poll, b.N times, and reports per task (MaxRefreshBatch
// a poll) the polls' wall time (ns/task, including disk sync waits), the process's CPU time
// (cpu-ns/task: the upstream's share included) and its allocations (allocs/task, likewise).
func pollCost(b *testing.B, before, poll func()) {
	var mallocs uint64
	var cpu time.Duration
	var ms runtime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		before()
		runtime.ReadMemStats(&ms)
		mallocs -= ms.Mallocs
		cpu -= cpuTime(b)
		b.StartTimer()
		poll()
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs
		cpu += cpuTime(b)
		b.StartTimer()
	}
	b.StopTimer()
	tasks := float64(b.N * MaxRefreshBatch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tasks, "ns/task")
	b.ReportMetric(float64(mallocs)/tasks, "allocs/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/tasks, "cpu-ns/task")
}

// createBatch creates MaxRefreshBatch tasks through h and returns their ids.
func createBatch(b *testing.B, h *Handler) []string {
	ids := make([]string, 0, MaxRefreshBatch)
	for range MaxRefreshBatch {
		rec := serve(h, http.MethodPost, createPath, createBody)
		var ans struct{ ID string }
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &ans) != nil || ans.ID == "" {
			b.Fatalf("create = %d %s", rec.Code, rec.Body)
		}
		ids = append(ids, ans.ID)
	}
	return ids
}

// cpuTime is the CPU time (user and system) the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRefreshUnchanged measures the watcher's later polls of tasks whose upstream answer
// does not change (a task queued or running upstream, the common case): one poll of
// MaxRefreshBatch tasks after their first, over a real Badger store, listed by id from the
// simulator, the clock moved on an Interval between polls (outside the timing). Nothing is
// written; reads/task counts the records read from the store. Run it by hand:
//
//	go test ./handlers/videotask/ -run '^$' -bench RefreshUnchanged -benchmem -cpu 1 -count 6
func BenchmarkRefreshUnchanged(b *testing.B) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	sim := simulator.New()
	sim.QueuedFor, sim.RunningFor, sim.Now = 0, 1000*time.Hour, clock.Now // running: the first answer is written
	up := newFakeUpstream(b, sim.ServeHTTP)
	store := &readCountingStore{Store: openBadger(b)}
	h := newHandler(b, up.URL, store)
	h.Client = &http.Client{Timeout: 30 * time.Second}
	h.Now = clock.Now
	// A short Interval: the clock moves on an Interval per poll, and a task runs for 48 hours at
	// the most (the polls of a long run would find it overdue).
	w := &Watcher{Tasks: h, Interval: time.Minute}
	w.init()
	ctx := context.Background()
	w.ownTickAndScan(ctx)
	h.Watcher = w
	ids := createBatch(b, h)
	later := func() {
		for range 11 { // an Interval, the leases renewed on the way
			clock.Advance(w.Interval / 11)
			w.ownTick(ctx)
		}
	}
	poll := func() {
		if calls := w.poll(ctx, ids); calls != 1 {
			b.Fatalf("poll made %d upstream calls, want 1", calls)
		}
	}
	later()
	poll() // the first answers, written
	reads := store.read.Load()
	pollCost(b, later, poll)
	for _, id := range ids {
		if t, err := h.Store.Task(ctx, id); err != nil || t.Version != 2 {
			b.Fatalf("record after the polls: %+v, %v; want version 2 (no write after the first answer)", t, err)
		}
	}
	b.ReportMetric(float64(store.read.Load()-reads)/float64(b.N*MaxRefreshBatch), "reads/task")
}
