// Package holds keeps the money held for requests and tasks from staying taken: its Reconciler
// releases the holds that nobody ended by their deadline (a process killed between the hold
// and the task record, a lost upstream answer, a crash mid-request).
package holds

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/storage"
)

// DefaultInterval is how often the reconciler looks for overdue holds. A hold that nobody ends
// is released at most DefaultInterval (plus the time of one pass) after its deadline, which
// its taker sets (storage.DefaultHoldDeadline after the hold unless it knows better); when the
// instance that reconciled dies, another takes over within LeaseFactor intervals.
const DefaultInterval = 30 * time.Second

// LeaseFactor: the reconciler's lease lasts this many intervals, renewed on every pass.
const LeaseFactor = 3

// LeaseName is the lease that lets one gateway instance at a time reconcile.
const LeaseName = "billing/hold-reconciler"

// ReleaseReason is the Note of the release entries the reconciler makes.
const ReleaseReason = "released by the reconciler: the hold was still open at its deadline"

// batch is how many overdue holds one store call lists.
const batch = 100

// maxBatchesPerPass bounds one pass; the next pass goes on where it stopped.
const maxBatchesPerPass = 50

// Reconciler releases overdue holds: open, unbound holds whose deadline has passed. One
// gateway instance at a time does it (it holds the lease LeaseName); each release is the
// ledger's exactly-once ReleaseOverdue, so a hold is released once even if two instances
// overlapped or a request ends its hold at the same moment, and a hold that its task's create
// bound after it was listed is left to the task.
type Reconciler struct {
	Ledger storage.Ledger
	Leases storage.Coordination
	// Owner names this instance in the lease; default: a random token.
	Owner string
	// Interval between passes; default DefaultInterval.
	Interval time.Duration
	// Now is the clock that deadlines are compared with; default time.Now.
	Now func() time.Time
	// Released, when set, is called with each hold the reconciler released and its entry.
	Released func(storage.Hold, storage.LedgerEntry)
	// Claims, when set (a store shared by processes), are the active-task slot claims of
	// creates that take no hold: each pass also gives back the slots of those still open past
	// their deadline (their creates' processes died before a task's record kept them).
	Claims storage.SlotClaims
	// Lapsed, when set, ends on each pass, under the same lease, the holds that records carry
	// past their lease (passthrough.LapsedHeldObjects.Pass: pass-through videos and image tasks
	// whose end nobody saw), and returns how many it ended.
	Lapsed func(ctx context.Context, now time.Time) (int, error)
	Logger *zap.Logger
}

func (r *Reconciler) defaults() {
	if r.Owner == "" {
		r.Owner = storage.NewClaimToken()
	}
	if r.Interval <= 0 {
		r.Interval = DefaultInterval
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Logger == nil {
		r.Logger = zap.NewNop()
	}
}

// Run reconciles at once and then every Interval until stop is closed; it then gives up the
// lease so that another instance may take over at once.
func (r *Reconciler) Run(stop <-chan struct{}) {
	r.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if _, err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.Logger.Warn("reconciling overdue holds", zap.Error(err))
		}
		select {
		case <-stop:
			// Not bound to ctx, which is done: the lease is given up on the way out.
			if err := r.Leases.ReleaseLease(context.Background(), LeaseName, r.Owner); err != nil {
				r.Logger.Warn("giving up the hold reconciler's lease", zap.Error(err))
			}
			return
		case <-t.C:
		}
	}
}

// Pass releases the overdue holds once, if this instance holds (or takes) the lease, and
// returns how many it released. A hold that another party ended meanwhile is skipped.
func (r *Reconciler) Pass(ctx context.Context) (int, error) {
	r.defaults()
	now := r.Now()
	held, err := r.Leases.AcquireLease(ctx, LeaseName, r.Owner, now, LeaseFactor*r.Interval)
	if err != nil || !held {
		return 0, err
	}
	released := 0
	if r.Claims != nil {
		n, err := r.releaseOverdueClaims(ctx, now)
		released += n
		if err != nil {
			return released, err
		}
	}
	if r.Lapsed != nil {
		n, err := r.Lapsed(ctx, now)
		if n > 0 {
			r.Logger.Info("settled the holds of pass-through objects whose lease ended unseen", zap.Int("objects", n))
		}
		if err != nil && ctx.Err() == nil {
			// Tried again on the next pass; the overdue holds are released meanwhile.
			r.Logger.Warn("settling the holds of pass-through objects past their lease", zap.Error(err))
		}
	}
	for range maxBatchesPerPass {
		overdue, err := r.Ledger.OverdueHolds(ctx, now, batch)
		if err != nil {
			return released, err
		}
		for _, h := range overdue {
			e, err := r.Ledger.ReleaseOverdue(ctx, h.ID, ReleaseReason, now)
			switch {
			case errors.Is(err, storage.ErrHoldEnded), errors.Is(err, storage.ErrNotFound):
				continue // ended by its request or another reconciler meanwhile
			case errors.Is(err, storage.ErrHoldBound):
				continue // bound by its task's create since it was listed: the task's finish ends it
			case errors.Is(err, storage.ErrHoldNotDue):
				continue // renewed by its request, which still runs, since it was listed
			case err != nil:
				return released, err
			}
			released++
			r.Logger.Info("released an overdue hold", zap.String("hold", h.ID), zap.String("account", h.Account),
				zap.String("amount", money.Format(h.Amount)), zap.Time("deadline", h.Deadline))
			if r.Released != nil {
				r.Released(h, e)
			}
		}
		if len(overdue) < batch {
			return released, nil
		}
		if err := r.Leases.RenewLease(ctx, LeaseName, r.Owner, r.Now(), LeaseFactor*r.Interval); err != nil {
			return released, err // lost: the other instance goes on
		}
	}
	return released, nil
}

// releaseOverdueClaims gives back the slots of the claims still open past their deadline, each
// once (storage.SlotClaims.ReleaseClaim: a claim that its create ended meanwhile, by its task's
// record or its own release, is left alone), and returns how many it gave back.
func (r *Reconciler) releaseOverdueClaims(ctx context.Context, now time.Time) (int, error) {
	released := 0
	for range maxBatchesPerPass {
		ids, err := r.Claims.OverdueClaims(ctx, now, batch)
		if err != nil {
			return released, err
		}
		for _, id := range ids {
			ok, err := r.Claims.ReleaseClaim(ctx, id)
			if err != nil {
				return released, err
			}
			if ok {
				released++
				r.Logger.Info("gave back the active-task slot of a create whose claim was open at its deadline", zap.String("claim", id))
			}
		}
		if len(ids) < batch {
			break
		}
	}
	return released, nil
}
