package accounting

import (
	"context"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// A pass-through video's hold, handed over to its record (BindTo), outlives its create's request
// (whose Settle then charges nothing) and ends with the video, on both stores: a failed one is
// released in full, a completed one settled at the length and picture its answer reported (the
// estimate standing in for the rest), a deleted one and one whose lease ended at the estimate;
// each gives its slot back.
func TestObjectFinishedEndsTheVideosHold(t *testing.T) {
	for name, open := range bothStores(t) {
		for _, c := range []struct {
			status  string
			actual  billing.Usage
			charged int64
		}{
			{"failed", billing.Usage{VideoSeconds: 8, Resolution: "720p"}, 0},
			{"FAILED", billing.Usage{}, 0},
			{"cancelled", billing.Usage{}, 0},
			{"completed", billing.Usage{VideoSeconds: 4, Resolution: "720p", Ratio: "9:16"}, 400_000},
			{"completed", billing.Usage{VideoSeconds: 12}, 1_200_000},
			{"completed", billing.Usage{}, 800_000},
			{"deleted", billing.Usage{}, 800_000},
			{"lease_ended", billing.Usage{}, 800_000},
		} {
			t.Run(name+"/"+c.status, func(t *testing.T) {
				objectHoldEnds(t, open(t), c.status, c.actual, c.charged)
			})
		}
	}
}

func objectHoldEnds(t *testing.T, store storage.Store, status string, actual billing.Usage, charged int64) {
	ctx := context.Background()
	a := fundedAccountantOn(t, store, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	id := auth.Identity{Account: "acme", KeyID: "k1", Limits: storage.Limits{MaxActiveTasks: 1}}
	slot, err := a.StartTaskFor(ctx, id, "veo")
	if err != nil {
		t.Fatal(err)
	}
	hold, err := a.HoldFor(ctx, id, "veo", SlotRef, videoEstimate(8), storage.DefaultHoldDeadline)
	if err != nil || hold.Estimate.Amount != 800_000 {
		t.Fatalf("hold = %+v, %v; want 0.8 (8 s at 0.10)", hold.Estimate, err)
	}
	record, err := slot.CreateTask(ctx, store, storage.Task{ID: "video_1", Kind: "video_job", Account: "acme", KeyID: "k1",
		Provider: "openai", Model: "veo", Status: "active", Active: true, CreatedAt: a.Now().Unix(),
		HoldID: hold.ID, HoldAmount: int64(hold.Estimate.Amount), HoldUsage: hold.Estimate.Usage.Encode(), HoldPrice: hold.EncodedPrice()})
	if err != nil {
		t.Fatal(err)
	}
	if hold.BindTo(ctx, record.ID) {
		t.Fatal("BindTo reports the hold reconciled")
	}
	if got := hold.Settle(billing.Usage{}); got != 0 {
		t.Fatalf("the create's Settle after BindTo charged %d; want nothing (the video's end charges)", got)
	}
	if h, err := store.HoldByID(ctx, hold.ID); err != nil || h.State != storage.HoldOpen || !h.Bound {
		t.Fatalf("hold after the create = %+v, %v; want open and bound", h, err)
	}
	record.Finished, record.Status = true, status
	a.ObjectFinishedAs(ctx, record, actual)
	h, err := store.HoldByID(ctx, hold.ID)
	wantState := storage.HoldSettled
	if charged == 0 {
		wantState = storage.HoldReleased
	}
	if err != nil || h.State != wantState {
		t.Fatalf("hold after %s = %+v, %v; want %s", status, h, err, wantState)
	}
	b, err := store.Balance(ctx, "acme")
	if err != nil || b.Amount != 10_000_000-charged || b.Held != 0 {
		t.Fatalf("balance after %s = %+v, %v; want %d charged, nothing held", status, b, err, charged)
	}
	if n, err := store.Counter(ctx, ActiveCounter("k1")); err != nil || n != 0 {
		t.Fatalf("active slots after %s = %d, %v; want 0", status, n, err)
	}
}
