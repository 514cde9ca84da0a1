package storage

import (
	"context"
	"time"
)

// RenewHold moves an open, unbound hold's deadline later, under its account's lock, so that it
// cannot interleave with the reconciler's release (which checks the deadline under the same
// lock: endHold). A transient hold is in memory only, and so is its deadline. A recorded one
// is on the reconciler's list in Badger (prefixOpenHold, by deadline): its list key moves and
// its record is written again, in the ledger's batch, not synced (a renewal lost to a crash
// leaves the earlier deadline, which is what a crash calls for anyway: the request went with
// its process).
func (b *Badger) RenewHold(_ context.Context, holdID string, deadline time.Time) error {
	a, h, err := b.lockHold(holdID)
	if err != nil {
		return err
	}
	switch {
	case h.rec.Hold.State != HoldOpen:
		a.mu.Unlock()
		return endedError(h.rec.Hold)
	case h.rec.Hold.Bound:
		a.mu.Unlock()
		return ErrHoldBound
	case !deadline.After(h.rec.Hold.Deadline):
		a.mu.Unlock()
		return nil
	case h.rec.Hold.Transient:
		h.rec.Hold.Deadline = deadline
		a.mu.Unlock()
		return nil
	}
	rec := h.rec
	op := ledgerOp{acct: a, lazy: true, writes: make([]bookWrite, 0, 3)}
	op.writes = append(op.writes, bookWrite{key: openHoldKey(rec.Hold), del: true})
	rec.Hold.Deadline = deadline
	op.writes = append(op.writes, bookWrite{key: openHoldKey(rec.Hold), val: []byte{}},
		bookWrite{key: holdKey(rec.Hold.ID), val: rec.encode()})
	h.rec = rec
	return b.writeHoldChange(a, h, &op)
}
