package storage

import (
	"context"
	"time"
)

// SlotClaims is what a store shared by several gateway processes (Redis) offers so that the
// active-task slot of a create that takes no hold (a model without a price) is given back when
// its process dies before the task's record keeps the slot. (A priced create's hold does that:
// see the accounting package's SlotRef. A store of one process, Badger, recounts its slots when
// it is opened instead: see Badger.RecountSlots.)
//
// A claim is a slot taken on a counter, with a deadline. It ends once, by whichever comes first:
// ReleaseClaim (the create failed, or the reconciler found it overdue), which gives the slot
// back; or the task's create (CreateClaimedTask), whose record then keeps the slot.
type SlotClaims interface {
	// ClaimSlot adds 1 to counter unless that would exceed limit (a negative limit: none), as
	// ReserveCounter does, and records the claim c, atomically. ok is false when the counter is
	// at its limit: nothing changed.
	ClaimSlot(ctx context.Context, c SlotClaim, limit int64) (ok bool, err error)
	// ReleaseClaim gives back the slot of an open claim (its counter less 1) and ends the claim,
	// atomically; it reports whether it did: false when the claim had ended (released, or kept
	// by its task's record), and nothing changed.
	ReleaseClaim(ctx context.Context, claimID string) (released bool, err error)
	// OverdueClaims lists the ids of at most limit open claims whose deadline is before now,
	// earliest first. The reconciler releases each through ReleaseClaim.
	OverdueClaims(ctx context.Context, now time.Time, limit int) ([]string, error)
	// CreateClaimedTask is CreateTask for the task of a create whose slot is the claim c: the
	// record's write ends the claim, in the same atomic step, and the record keeps the slot
	// (task.Active) only if the claim was still open; one the reconciler released first is
	// written without Active. It answers the record as written.
	CreateClaimedTask(ctx context.Context, task Task, c SlotClaim) (Task, error)
}

// SlotClaim is a slot taken by a create until its task's record keeps it (CreateClaimedTask).
type SlotClaim struct {
	// ID is random, made by the claimer.
	ID string
	// Counter is the counter the slot was taken on.
	Counter string
	// Deadline is when the reconciler gives the slot back if the claim is still open.
	Deadline time.Time
}
