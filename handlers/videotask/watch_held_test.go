package videotask

import (
	"context"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
)

// newClockedWatcher is newCreatedWatcher on clock (the handler's, the watcher's and the
// simulator's), whose polls the test makes with pollAfter.
func newClockedWatcher(t *testing.T, up *simUpstream, clock *testclock.Clock) (*Handler, *Watcher, *readCountingStore) {
	t.Helper()
	up.sim.Now = clock.Now
	store := &readCountingStore{Store: openBadger(t)}
	h := newHandler(t, up.URL, store)
	h.Client.Timeout = 10 * time.Second
	h.Now = clock.Now
	w := &Watcher{Tasks: h, Interval: time.Hour}
	w.init()
	w.ownTickAndScan(context.Background())
	h.Watcher = w
	return h, w, store
}

// pollAfter moves the clock on by more than half an Interval (the watcher renewing its leases
// on the way, as its ticks would), so that the tasks' records refreshed by the last poll are
// due again, and polls ids. It returns the upstream calls made and the records read from the
// store.
func pollAfter(t *testing.T, w *Watcher, clock *testclock.Clock, store *readCountingStore, ids []string) (calls int, read int64) {
	t.Helper()
	ctx := context.Background()
	for range 7 {
		clock.Advance(w.Interval / 12)
		w.ownTick(ctx)
	}
	before := store.read.Load()
	calls = w.poll(ctx, ids)
	return calls, store.read.Load() - before
}

// The polls of tasks whose upstream answer does not change start from the records the watcher
// last wrote or read: they read none from the store and write none, except every
// maxHeldPolls-th, which reads each record again.
func TestLaterPollsStartFromTheHeldRecords(t *testing.T) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	up := newSimUpstream(t, 0, 100*time.Hour, true) // running throughout
	h, w, store := newClockedWatcher(t, up, clock)
	ids := createTasks(t, h, 5)
	// The first poll starts from the created records and writes the first answers (running,
	// version 2).
	if calls, read := pollAfter(t, w, clock, store, ids); calls != 1 || read != 0 {
		t.Fatalf("first poll: %d upstream calls, %d records read; want 1 and 0", calls, read)
	}
	for poll := 2; poll <= maxHeldPolls+3; poll++ {
		wantRead := int64(0)
		if poll == maxHeldPolls+1 {
			wantRead = int64(len(ids)) // the maxHeldPolls-th poll since the first one's write
		}
		if calls, read := pollAfter(t, w, clock, store, ids); calls != 1 || read != wantRead {
			t.Fatalf("poll %d: %d upstream calls, %d records read; want 1 and %d", poll, calls, read, wantRead)
		}
	}
	for id, version := range versions(t, h, ids) {
		if version != 2 {
			t.Errorf("task %s at version %d after polls of an unchanged answer, want 2 (the first answer's write)", id, version)
		}
	}
}

// A held record that another instance changed meanwhile is not written over: when the
// upstream's answer changes, the watcher's compare-and-set on the version it holds fails, and
// the change is made again on the current record. Each failed task gives its slot and its cost
// back once.
func TestHeldRecordChangedElsewhere(t *testing.T) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	up := newSimUpstream(t, 0, 50*time.Minute, true) // running at the first poll, failed at the second
	h, w, store := newClockedWatcher(t, up, clock)
	ctx := context.Background()
	ids := createFailingTasks(t, h, 4)
	if calls, _ := pollAfter(t, w, clock, store, ids); calls != 1 {
		t.Fatalf("first poll made %d upstream calls, want 1", calls)
	}
	changed := ids[:2]
	stopCallbacks(t, h, changed)
	if calls, read := pollAfter(t, w, clock, store, ids); calls != 1 || read != 0 {
		t.Fatalf("second poll: %d upstream calls, %d records read; want 1 and 0 (the held records)", calls, read)
	}
	for i, id := range ids {
		rec, err := h.Store.Task(ctx, id)
		if err != nil || !rec.Finished || rec.Status != StatusFailed {
			t.Fatalf("record %+v, %v; want failed and finished", rec, err)
		}
		wantGone, wantVersion := false, int64(4) // created, running, failed, its effects done
		if i < len(changed) {
			wantGone, wantVersion = true, 5 // created, running, changed, failed, its effects done
		}
		if rec.CallbackGone != wantGone || rec.Version != wantVersion || rec.Effects != 0 {
			t.Fatalf("record %+v: the change made meanwhile is lost, or the record was written more than once", rec)
		}
	}
	if active, used := counters(t, h.Store); active != 0 || used != 0 {
		t.Fatalf("active %d, quota used %d after the failures; want 0 and 0", active, used)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.tracked) != 0 || len(w.records) != 0 {
		t.Fatalf("finished tasks still followed: %d tracked, %d records held", len(w.tracked), len(w.records))
	}
}
