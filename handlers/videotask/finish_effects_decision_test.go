package videotask

import (
	"context"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// TestFinishEffectsChargeAsTheFinishDecided: the finish of an expired task decides whether its
// hold is charged its estimate (its provider may still make it: EffectChargeEstimate; it went
// after a DELETE its provider accepted: EffectDeleted) or released, in the compare-and-set that
// finishes it. A sweep that does the effects of a winner that died after that change, from the
// record alone, must decide as the winner would have.
func TestFinishEffectsChargeAsTheFinishDecided(t *testing.T) {
	for _, tc := range []struct {
		name     string
		how      int64
		wantUsed int64
	}{
		{"released", 0, 0},
		{"charged its estimate", storage.EffectChargeEstimate, 1},
		{"deleted after an accepted DELETE", storage.EffectDeleted, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newSimUpstream(t, 0, 0, true)
			h := newHandler(t, up.URL, nil)
			ids := createFailingTasks(t, h, 1)
			ctx := context.Background()
			rec, err := storage.UpdateTask(ctx, h.Store, ids[0], func(cur *storage.Task) error {
				cur.Status = StatusExpired
				if !h.markFinished(cur, false) {
					t.Fatal("the task was finished already")
				}
				cur.Effects |= tc.how
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := h.Store.Task(ctx, rec.ID) // what a watcher reads of a dead winner's finish
			if err != nil || stored.Effects != storage.EffectHold|tc.how {
				t.Fatalf("stored %+v, %v; want the finish's effects and its decision", stored, err)
			}
			h.finishEffects(ctx, stored)
			if active, used := counters(t, h.Store); active != 0 || used != tc.wantUsed {
				t.Fatalf("after the sweep: active %d, quota used %d; want 0 and %d", active, used, tc.wantUsed)
			}
		})
	}
}

// TestSettleRecordsTheChargeBeforeItsDecision: settle's winner decides after its compare-and-set
// (a cancel at the provider, sent by the winner alone). Until it has decided, the record says
// charge: a winner that dies there leaves a sweep that charges the estimate. A winner that
// decides to release records it before the effects, which then release.
func TestSettleRecordsTheChargeBeforeItsDecision(t *testing.T) {
	for _, release := range []bool{false, true} {
		up := newSimUpstream(t, 0, 0, true)
		h := newHandler(t, up.URL, nil)
		ids := createFailingTasks(t, h, 1)
		ctx := context.Background()
		task, err := h.Store.Task(ctx, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		var during storage.Task
		_, err = h.settle(ctx, task, verdict{status: StatusExpired, code: "task_expired", message: "expired", logged: "expired",
			won: func() bool {
				var err error
				if during, err = h.Store.Task(ctx, task.ID); err != nil {
					t.Error(err)
				}
				return !release
			}})
		if err != nil {
			t.Fatal(err)
		}
		if during.Effects != storage.EffectHold|storage.EffectChargeEstimate {
			t.Fatalf("while the winner decides, the record's effects are %b; want the hold's, charged (%b)", during.Effects, storage.EffectHold|storage.EffectChargeEstimate)
		}
		want := int64(1)
		if release {
			want = 0
		}
		if active, used := counters(t, h.Store); active != 0 || used != want {
			t.Fatalf("release %v: active %d, quota used %d; want 0 and %d", release, active, used, want)
		}
	}
}
