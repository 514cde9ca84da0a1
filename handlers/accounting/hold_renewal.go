package accounting

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// The renewals of the holds of running requests. A request's hold (HoldFor) has its deadline
// moved on every third of its deadline while the request runs (storage.Ledger.RenewHold), so that
// a request that outlasts the deadline (a long stream) is settled by its own end, not released by
// the reconciler. Nearly every request ends well within a third of its deadline, so a request
// costs only its entry in a list of running holds, added when the hold is taken and removed when
// it ends; one goroutine, running while the list has entries, renews those that are due.

// minRenewalTick bounds how often the renewer wakes (tests use deadlines of milliseconds).
const minRenewalTick = time.Millisecond

// renewals is the Accountant's list of running holds (the zero value is empty, with no renewer).
type renewals struct {
	mu sync.Mutex
	// head is the list's first entry (linked through holdEnd.prev and holdEnd.next).
	head *holdEnd
	// tick is how often the renewer wakes: a quarter of the shortest renewal interval listed
	// since it started. running tells whether it runs.
	tick    time.Duration
	running bool
	// shorter wakes the renewer when a hold with a shorter interval than its tick is listed:
	// it would otherwise sleep out the longer tick first, past that hold's deadline.
	shorter chan struct{}
}

// holdRenewal is a hold's place in the list of running holds.
type holdRenewal struct {
	prev, next *holdEnd
	listed     bool
	holdID     string
	// every is the renewal interval (a third of deadline); due is when the next renewal is.
	every, deadline time.Duration
	due             time.Time
	// renewing is set while a renewal of the hold runs (one at a time).
	renewing bool
}

// renew lists the hold holdID for renewals while its request runs: every third of deadline its
// deadline moves to deadline from then, until the hold ends (Settle or Release unlist it) or the
// ledger answers that it has ended, was bound or is unknown. A renewal that fails otherwise (the
// store unreachable) is tried again at the next third, which still comes before the deadline it
// failed to move. Renewals also stop once the request's context is done.
func (e *holdEnd) renew(holdID string, deadline time.Duration) {
	every := deadline / 3
	if every <= 0 {
		return
	}
	r := &e.a.renewals
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.done.Load() || e.listed {
		return
	}
	e.holdRenewal = holdRenewal{next: r.head, listed: true, holdID: holdID, every: every, deadline: deadline,
		due: time.Now().Add(every)}
	if r.head != nil {
		r.head.prev = e
	}
	r.head = e
	tick := max(every/4, minRenewalTick)
	if !r.running {
		if r.shorter == nil {
			r.shorter = make(chan struct{}, 1)
		}
		r.running, r.tick = true, tick
		go e.a.runRenewals(r.shorter)
	} else if tick < r.tick {
		r.tick = tick
		select {
		case r.shorter <- struct{}{}:
		default: // woken already
		}
	}
}

// stopRenewal unlists an ending hold. A renewal already under way may still move the deadline
// once; the hold's end, which follows, makes that moot.
func (e *holdEnd) stopRenewal() {
	r := &e.a.renewals
	r.mu.Lock()
	r.unlist(e)
	r.mu.Unlock()
}

// unlist removes e from the list, when listed; call it with mu held.
func (r *renewals) unlist(e *holdEnd) {
	if !e.listed {
		return
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		r.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	}
	e.prev, e.next, e.listed = nil, nil, false
}

// runRenewals is the renewer: it wakes every tick, unlists the holds whose request is over (the
// server cancels a request's context once its handler returns: such a hold, not ended, is left
// to the reconciler at the deadline it has, as a hold whose process died), starts the renewal of
// each hold that is due, and stops once the list is empty. A hold listed with a shorter tick
// wakes it (shorter) to sleep the shorter one from then.
func (a *Accountant) runRenewals(shorter <-chan struct{}) {
	r := &a.renewals
	var timer *time.Timer
	for {
		r.mu.Lock()
		tick := r.tick
		r.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(tick)
		} else {
			timer.Reset(tick)
		}
		select {
		case <-timer.C:
		case <-shorter:
			timer.Stop()
		}
		now := time.Now()
		r.mu.Lock()
		for e := r.head; e != nil; {
			next := e.next
			switch {
			case e.done.Load() || e.ctx.Err() != nil:
				r.unlist(e)
			case !e.renewing && !now.Before(e.due):
				e.renewing = true
				go e.renewOnce()
			}
			e = next
		}
		if r.head == nil {
			r.running = false
			r.mu.Unlock()
			timer.Stop()
			return
		}
		r.mu.Unlock()
	}
}

// renewOnce moves the hold's deadline on once, and sets its next renewal, or unlists it when the
// ledger answers that it has ended, was bound or is unknown.
func (e *holdEnd) renewOnce() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), e.every)
	err := e.a.Store.RenewHold(ctx, e.holdID, e.a.clock().Add(e.deadline))
	cancel()
	gone := errors.Is(err, storage.ErrHoldEnded) || errors.Is(err, storage.ErrHoldBound) || errors.Is(err, storage.ErrNotFound)
	if err != nil && !gone {
		e.a.logger().Warn("renewing the hold of a request that still runs failed; tried again",
			append(e.owner.fields(), zap.String("hold_id", e.holdID), zap.Error(err))...)
	}
	r := &e.a.renewals
	r.mu.Lock()
	defer r.mu.Unlock()
	e.renewing = false
	if gone {
		r.unlist(e)
		return
	}
	e.due = time.Now().Add(e.every)
}
