package videotask

import (
	"context"
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
	up := newSimUpstream(t, 100*time.Hour, time.Hour, true) // queued throughout
	h, w, store := newClockedWatcher(t, up, clock)
	ctx := context.Background()
	ids := createTasks(t, h, 1)
	// The first poll writes the first answer (version 2): the last time the store is touched.
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
