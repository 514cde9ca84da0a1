package videotask

import (
	"context"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/idempotency"
)

// createClaim is what a create has taken before it calls the provider: a slot among its key's
// active tasks and a hold on its account's balance. A create that ends without a task record
// gives them back in one of two ways, free or charged; a recorded task's finish settles them.
type createClaim struct {
	// ctx is the create request's: the idempotency guard's marks ride on it.
	ctx  context.Context
	slot accounting.Slot
	hold accounting.Hold
}

// free ends a create that made nothing at the provider: the hold is released (why goes to its
// ledger entry) and the slot given back.
func (c createClaim) free(why string) {
	c.hold.Release(why)
	c.slot.Release()
}

// charge ends a create whose provider may have made a video that the gateway will not follow:
// the slot is given back (no record will release it), the hold is charged as estimated, and the
// create's idempotency key is marked made, so that a retry with it does not make another.
func (c createClaim) charge() {
	c.slot.Release()
	c.hold.Settle(billing.Usage{})
	idempotency.MarkMade(c.ctx)
}
