package accounting

import (
	"context"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/storage"
)

// TestSlotOfReleasedHold: the released hold of a slot-taking create gives its slot back, once per
// call; a hold of another request (another ref, no key) gives nothing.
func TestSlotOfReleasedHold(t *testing.T) {
	a := newAccountant(t)
	ctx := context.Background()
	id := auth.Identity{KeyID: "k1", Account: "acct", Limits: storage.Limits{MaxActiveTasks: 1}}
	slot, err := a.StartTask(ctx, id)
	if err != nil || slot.HoldRef() != SlotRef || (Slot{}).HoldRef() != "" {
		t.Fatalf("slot %+v, %v; HoldRef %q", slot, err, slot.HoldRef())
	}
	if _, err := a.StartTask(ctx, id); status(err) != 429 {
		t.Fatalf("a second slot: %v, want 429", err)
	}
	for _, h := range []storage.Hold{{ID: "h0", KeyID: "k1"}, {ID: "h1", KeyID: "k1", Ref: "req-1"}, {ID: "h2", Ref: SlotRef}} {
		a.SlotOfReleasedHold(ctx, h)
	}
	if n, _ := a.Store.Counter(ctx, ActiveCounter("k1")); n != 1 {
		t.Fatalf("active = %d after holds of other requests, want 1", n)
	}
	a.SlotOfReleasedHold(ctx, storage.Hold{ID: "h3", KeyID: "k1", Ref: SlotRef})
	if n, _ := a.Store.Counter(ctx, ActiveCounter("k1")); n != 0 {
		t.Fatalf("active = %d after the slot-taking create's hold was released, want 0", n)
	}
	if _, err := a.StartTask(ctx, id); err != nil {
		t.Fatalf("the slot was not given back: %v", err)
	}
}
