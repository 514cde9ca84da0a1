package videotask

import (
	"context"
	"sync"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// TestFinishEffectsOfADeadWinnerAreDoneOnce: a finish whose winner died after its
// compare-and-set leaves a record that says finished with its effects pending, still in the
// unfinished index. A sweep and a late winner doing them at once, both from that record, end
// the hold and give the slot back once, and the record then leaves the index.
func TestFinishEffectsOfADeadWinnerAreDoneOnce(t *testing.T) {
	up := newSimUpstream(t, 0, 0, true)
	h := newHandler(t, up.URL, nil)
	ids := createFailingTasks(t, h, 1)
	ctx := context.Background()
	won := false
	rec, err := storage.UpdateTask(ctx, h.Store, ids[0], func(cur *storage.Task) error {
		cur.Status = StatusFailed
		won = h.markFinished(cur, false)
		return nil
	})
	if err != nil || !won || rec.Effects != storage.EffectHold || !rec.Active {
		t.Fatalf("finish = %+v, %v, won %v; want its hold's effect pending and its slot kept", rec, err, won)
	}
	indexed := func() bool {
		found := false
		err := h.Store.UnfinishedTasks(ctx, func(id string) bool { found = found || id == ids[0]; return true })
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	if !indexed() {
		t.Fatal("a finished record with effects pending left the unfinished index: no watcher would do them")
	}
	if active, used := counters(t, h.Store); active != 1 || used != 1 {
		t.Fatalf("before the effects: active %d, quota used %d; want 1 and 1", active, used)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { h.finishEffects(ctx, rec) })
	}
	wg.Wait()
	if active, used := counters(t, h.Store); active != 0 || used != 0 {
		t.Fatalf("after three runs of the effects: active %d, quota used %d; want 0 and 0 (slot and hold given back once)", active, used)
	}
	if got, err := h.Store.Task(ctx, ids[0]); err != nil || got.Effects != 0 || got.Active {
		t.Fatalf("record %+v, %v; want its effects and its slot cleared", got, err)
	}
	if indexed() {
		t.Fatal("a finished record whose effects are done is still in the unfinished index")
	}
}
