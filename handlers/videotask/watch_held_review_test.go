package videotask

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// A task polled from its held record for seven polls (maxHeldPolls-1) while its stored record
// was changed elsewhere, in a way its upstream's answer does not tell (here: finished by
// another instance), is caught at the eighth: that poll reads the record from the store, finds
// the task finished, and neither reads it upstream nor follows it any more.
func TestHeldRecordReadAtEveryEighthPoll(t *testing.T) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	up := newSimUpstream(t, 0, 100*time.Hour, true) // running throughout
	h, w, store := newClockedWatcher(t, up, clock)
	ctx := context.Background()
	ids := createTasks(t, h, 1)
	// The first poll writes the first answer (running, version 2): the last time the store is
	// touched.
	if calls, read := pollAfter(t, w, clock, store, ids); calls != 1 || read != 0 {
		t.Fatalf("first poll: %d upstream calls, %d records read; want 1 and 0", calls, read)
	}
	if _, err := storage.UpdateTask(ctx, h.Store, ids[0], func(cur *storage.Task) error {
		cur.Status, cur.Finished = StatusCancelled, true // as another instance's cancel stores it
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for poll := 1; poll < maxHeldPolls; poll++ {
		if calls, read := pollAfter(t, w, clock, store, ids); calls != 1 || read != 0 {
			t.Fatalf("held poll %d: %d upstream calls, %d records read; want 1 and 0", poll, calls, read)
		}
	}
	calls, read := pollAfter(t, w, clock, store, ids)
	if read != 1 || calls != 0 {
		t.Fatalf("poll %d after the last store read: %d records read, %d upstream calls; want 1 and 0 (the change caught)",
			maxHeldPolls, read, calls)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tracked[ids[0]] || len(w.records) != 0 {
		t.Fatalf("the task finished elsewhere is still followed (tracked %v, %d records held)", w.tracked[ids[0]], len(w.records))
	}
}

// noteHookStore runs beforeNote (once) when the watcher records its reads under its leases:
// after the poll has taken its held records and before it reads the upstream.
type noteHookStore struct {
	*readCountingStore
	beforeNote func()
}

func (s *noteHookStore) NoteReads(ctx context.Context, owner string, at time.Time, keep time.Duration, groups []storage.ShardReads) ([]int, error) {
	if f := s.beforeNote; f != nil {
		s.beforeNote = nil
		f()
	}
	return s.readCountingStore.NoteReads(ctx, owner, at, keep, groups)
}

// A client's poll through this instance that refreshes a task while the watcher's poll of it is
// under way (its held record taken, the upstream not yet read) is seen by the watcher's next
// poll, as one between two polls is: the poll does not hold again the record the client's
// write replaced, so the next poll reads the record, finds the task read just now, and leaves
// it for its Interval.
func TestClientPollDuringAWatcherPollIsSeen(t *testing.T) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	up := newSimUpstream(t, 100*time.Hour, time.Hour, true) // queued throughout
	h, w, counting := newClockedWatcher(t, up, clock)
	store := &noteHookStore{readCountingStore: counting}
	h.Store = store // the watcher's too (w.Tasks is h)
	ids := createTasks(t, h, 1)
	if calls, _ := pollAfter(t, w, clock, counting, ids); calls != 1 {
		t.Fatalf("first poll made %d upstream calls, want 1", calls)
	}
	store.beforeNote = func() {
		if r := serve(h, http.MethodGet, createPath+"/"+ids[0], ""); r.Code != http.StatusOK {
			t.Errorf("client's query: %d %s", r.Code, r.Body)
		}
	}
	if calls, _ := pollAfter(t, w, clock, counting, ids); calls != 1 {
		t.Fatalf("second poll made %d upstream calls, want 1", calls)
	}
	stored, err := h.Store.Task(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	held, ok := w.records[ids[0]]
	w.mu.Unlock()
	if ok && held.t.Version != stored.Version {
		t.Errorf("the watcher holds version %d of a record the client's poll wrote as version %d", held.t.Version, stored.Version)
	}
	// A quarter of an Interval after the client's read: not to be read upstream again yet.
	for range 3 {
		clock.Advance(w.Interval / 12)
		w.ownTick(context.Background())
	}
	before := counting.read.Load()
	calls := w.poll(context.Background(), ids)
	if read := counting.read.Load() - before; calls != 0 || read != 1 {
		t.Fatalf("the poll after the client's: %d upstream calls, %d records read; want 0 and 1 (the client's read seen)", calls, read)
	}
}

// The records a watcher holds for the tasks of a shard that moves to another watcher are let go
// at the tasks' next poll, which leaves them to that watcher; those of its own shards stay held.
func TestHeldRecordsOfAShardHandedOverAreLetGo(t *testing.T) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	up := newSimUpstream(t, 100*time.Hour, time.Hour, true)
	h, a, store := newClockedWatcher(t, up, clock)
	a.Owner = "a"
	ids := createTasks(t, h, 12)
	if calls, _ := pollAfter(t, a, clock, store, ids); calls != 1 {
		t.Fatalf("first poll made %d upstream calls, want 1", calls)
	}
	b := &Watcher{Tasks: &Handler{Store: h.Store, Logger: h.Logger, Now: clock.Now}, Interval: a.Interval, Owner: "b"}
	b.init()
	ctx := context.Background()
	b.divide(ctx) // joins
	for range 3 {
		clock.Advance(a.ownershipTick())
		a.ownTick(ctx)
		b.ownTickAndScan(ctx)
	}
	if len(b.heldShards()) == 0 || len(a.heldShards()) == 0 {
		t.Fatalf("the shards were not divided: a holds %v, b %v", a.heldShards(), b.heldShards())
	}
	a.poll(ctx, ids)
	a.mu.Lock()
	defer a.mu.Unlock()
	mine := 0
	for _, id := range ids {
		_, held := a.records[id]
		if ok, _ := a.readable(storage.TaskShard(id, a.Shards)); !ok {
			if held || a.tracked[id] {
				t.Errorf("task %s of a shard handed over: record held %v, tracked %v", id, held, a.tracked[id])
			}
			continue
		}
		mine++
		if !held {
			t.Errorf("task %s of a's own shard holds no record", id)
		}
	}
	if mine == 0 || mine == len(ids) {
		t.Fatalf("%d of %d tasks in a's shards: the test needs both kinds", mine, len(ids))
	}
}
