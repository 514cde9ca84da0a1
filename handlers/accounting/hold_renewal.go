package accounting

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// renew starts the renewals of the hold holdID while its request runs: every third of deadline
// its deadline moves to deadline from then (storage.Ledger.RenewHold), until the hold ends
// (Settle or Release stop them) or the ledger answers that it has ended, was bound or is
// unknown. A renewal that fails otherwise (the store unreachable) is tried again at the next
// third, which still comes before the deadline it failed to move. Renewals also stop once the
// request's context is done. The timer is the only cost of a request that ends within
// deadline/3, as nearly all do.
func (e *holdEnd) renew(holdID string, deadline time.Duration) {
	every := deadline / 3
	if every <= 0 {
		return
	}
	e.renewal.Store(time.AfterFunc(every, func() {
		if e.done.Load() || e.ctx.Err() != nil {
			// Ended; or its request is over (the server cancels a request's context once its
			// handler returns) without ending it, which leaves it to the reconciler at the
			// deadline it has, as a hold whose process died.
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), every)
		err := e.a.Store.RenewHold(ctx, holdID, e.a.clock().Add(deadline))
		cancel()
		switch {
		case errors.Is(err, storage.ErrHoldEnded), errors.Is(err, storage.ErrHoldBound), errors.Is(err, storage.ErrNotFound):
			return
		case err != nil:
			e.a.logger().Warn("renewing the hold of a request that still runs failed; tried again",
				append(e.owner.fields(), zap.String("hold_id", holdID), zap.Error(err))...)
		}
		if t := e.renewal.Load(); t != nil && !e.done.Load() {
			t.Reset(every)
		}
	}))
}

// stopRenewal stops the renewals of an ending hold. A renewal already under way may still move
// the deadline once; the hold's end, which follows, makes that moot.
func (e *holdEnd) stopRenewal() {
	if t := e.renewal.Load(); t != nil {
		t.Stop()
	}
}
