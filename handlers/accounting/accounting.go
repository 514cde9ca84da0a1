// Package accounting applies the limits of an API key: its request rate, its number of unfinished
// video tasks, and (through holds on the ledger, see HoldFor) its account's balance and its
// budget; and it counts usage per key and per account.
//
// Money has one path: a request or task for a priced model holds its estimate and is settled or
// released once (holds.go). The former flat cost per model is a request price and the former
// per-key quota a budget (storage.Limits.SpendingLimit); nothing else charges.
package accounting

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/storage"
)

// ActiveRetryAfter is the Retry-After sent when a key has too many unfinished tasks.
const ActiveRetryAfter = 10 * time.Second

// Counter names.
func ActiveCounter(keyID string) string        { return "active/" + keyID }
func KeyUsage(keyID, what string) string       { return "usage/key/" + keyID + "/" + what }
func AccountUsage(account, what string) string { return "usage/account/" + account + "/" + what }

// Usage kinds.
const (
	UsageRequests = "requests"
	UsageTasks    = "tasks"
	// UsageSpent is the money charged by settlements, in micro-units (metered: it may trail
	// the ledger by one flush, and a crash may lose one flush of it; the ledger is exact).
	UsageSpent = "spent"
)

// Accountant applies limits and counts usage. It is shared by all handlers of a store.
type Accountant struct {
	Store storage.Store
	Meter *Meter
	// Usage receives the record of each finished task; nil writes none.
	Usage *usage.Recorder
	// Prices price the models; a request or task for a priced model holds its estimate
	// against the ledger (see HoldFor). Nil: nothing is priced.
	Prices *billing.Table
	// Logger receives failed refunds and releases. Default: none.
	Logger *zap.Logger
	// Now is the clock of the keys' rate windows and of task-finished usage records. Default:
	// time.Now.
	Now func() time.Time
	// Claims, when the store is shared by processes (Redis), makes the slot of a create for a
	// model without a price a claim (StartTaskFor), which the hold reconciler gives back if the
	// create's process dies before its task's record keeps it. Nil: no claims.
	Claims storage.SlotClaims

	// renewals lists the holds of running requests, to move their deadlines on (HoldFor).
	renewals renewals
}

func (a *Accountant) clock() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Accountant) logger() *zap.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return zap.NewNop()
}

// Admit applies the key's request rate (a sliding window kept in the store, so that gateways
// sharing a store share it) and counts the request.
func (a *Accountant) Admit(ctx context.Context, id auth.Identity) error {
	if l := id.Limits; l.RateRequests > 0 && l.RateWindow > 0 {
		name := fmt.Sprintf("rate/%s/%d/%s", id.KeyID, l.RateRequests, l.RateWindow)
		ok, wait, err := a.Store.AllowRate(ctx, name, l.RateRequests, l.RateWindow, a.clock())
		if err != nil {
			return err
		}
		if !ok {
			return apierror.New(http.StatusTooManyRequests, "rate_limit_exceeded",
				fmt.Sprintf("too many requests for this API key: at most %d per %s", l.RateRequests, apierror.FormatDuration(l.RateWindow))).WithRetryAfter(wait)
		}
	}
	a.Meter.add(1, usageRequests, id.KeyID, id.Account)
	return nil
}

// giveBackRetries bounds the attempts at a refund or slot release.
const giveBackRetries = 5

// addRetrying gives back to a counter (a refund, a slot release), retrying a failed write a few
// times, and logs a write that never succeeds with its context: the counter is then off by delta.
func (a *Accountant) addRetrying(ctx context.Context, counter string, delta int64, fields ...zap.Field) {
	err := retrying(ctx, func() error {
		_, _, err := a.Store.AddCounter(ctx, counter, delta, -1)
		return err
	})
	if err != nil {
		a.logger().Error("giving back to a counter failed; it stays off by delta",
			append(fields, zap.String("counter", counter), zap.Int64("delta", delta), zap.Error(err))...)
	}
}

// retrying runs write until it succeeds, at most giveBackRetries times with a growing pause
// between tries, and stops early when ctx is done; it returns the last error.
func retrying(ctx context.Context, write func() error) error {
	var err error
	for attempt := range giveBackRetries {
		if err = write(); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(50<<attempt) * time.Millisecond)
	}
	return err
}

// Slot is an active-task slot.
type Slot struct {
	// Held reports whether a counted slot was taken (only keys with max_active_tasks count).
	Held bool
	undo *slotUndo
}

// slotUndo is what Release needs to give a slot back, once.
type slotUndo struct {
	done  atomic.Bool
	a     *Accountant
	ctx   context.Context
	keyID string
	// claim is the slot's claim (StartTaskFor), nil for a plain slot.
	claim *storage.SlotClaim
}

// Release gives the slot back when the task was not created after all. It is safe to call more
// than once, also concurrently: one call releases. A claimed slot is given back by ending its
// claim, unless the reconciler ended it first (then it gave the slot back).
func (s Slot) Release() {
	u := s.undo
	if u == nil || !u.done.CompareAndSwap(false, true) {
		return
	}
	ctx := context.WithoutCancel(u.ctx)
	if u.claim != nil {
		u.a.releaseClaim(ctx, u.claim.ID, zap.String("key_id", u.keyID), zap.String("what", "slot release"))
		return
	}
	u.a.addRetrying(ctx, ActiveCounter(u.keyID), -1, zap.String("key_id", u.keyID), zap.String("what", "slot release"))
}

// GivenBack marks the slot given back by another party (the reconciler's release of the
// create's hold, see Hold.Reconciled): Release then does nothing.
func (s Slot) GivenBack() {
	if s.undo != nil {
		s.undo.done.Store(true)
	}
}

// Claim is the slot's claim (StartTaskFor): nil for a slot that is not a claim.
func (s Slot) Claim() *storage.SlotClaim {
	if s.undo == nil {
		return nil
	}
	return s.undo.claim
}

// TaskCreator writes a task's record if absent (storage.Tasks.CreateTask).
type TaskCreator interface {
	CreateTask(ctx context.Context, task storage.Task) (storage.Task, error)
}

// CreateTask writes the record of the task that keeps the slot (task.Active) through tasks, or,
// for a claimed slot, through the claims' CreateClaimedTask, which ends the claim in the same
// write: the record it answers keeps the slot (Active) only if the reconciler had not given it
// back first.
func (s Slot) CreateTask(ctx context.Context, tasks TaskCreator, task storage.Task) (storage.Task, error) {
	if c := s.Claim(); c != nil && task.Active {
		return s.undo.a.Claims.CreateClaimedTask(ctx, task, *c)
	}
	return tasks.CreateTask(ctx, task)
}

// releaseClaim ends a slot claim, giving its slot back if it was open, retrying a failed write a
// few times; one that never succeeds is logged and left to the reconciler, which releases the
// claim at its deadline.
func (a *Accountant) releaseClaim(ctx context.Context, claimID string, fields ...zap.Field) {
	err := retrying(ctx, func() error {
		_, err := a.Claims.ReleaseClaim(ctx, claimID)
		return err
	})
	if err == nil {
		return
	}
	a.logger().Error("releasing a slot claim failed; the reconciler gives the slot back at the claim's deadline",
		append(fields, zap.String("claim", claimID), zap.Error(err))...)
}

// SlotRef is the Ref of a hold taken by a create that holds one of its key's active-task slots
// (Slot.HoldRef) until its task's record keeps it. Such a hold that the reconciler releases
// (its create never ended: its process was killed while it waited for the upstream) had its
// slot taken with no record to give it back: SlotOfReleasedHold gives it back.
const SlotRef = "active-slot"

// HoldRef is the Ref for the hold of the create that took s: SlotRef when s is held (and not a
// claim, which its own reconciliation gives back), else "".
func (s Slot) HoldRef() string {
	if s.Held && s.Claim() == nil {
		return SlotRef
	}
	return ""
}

// SlotOfReleasedHold gives back the active-task slot of a hold that the reconciler released
// (holds.Reconciler.Released), when the hold was a slot-taking create's (Ref SlotRef): that
// create died (or stalled past the hold's deadline) before its hold was bound, and nothing else
// would ever give it back. The reconciler's release is exactly once
// (storage.Ledger.ReleaseOverdue), and so is this. A task record that took the slot before that
// release (a create that stalled between CreateTask and BindTask) does not give it back again:
// the ledger answers ErrHoldReconciled to the create's BindHold (which then clears the record's
// Active, see SlotGivenBack) and to the finish's Settle or Release (see Finished), whichever
// comes first.
func (a *Accountant) SlotOfReleasedHold(ctx context.Context, h storage.Hold) {
	if h.Ref != SlotRef || h.KeyID == "" {
		return
	}
	a.addRetrying(context.WithoutCancel(ctx), ActiveCounter(h.KeyID), -1, zap.String("key_id", h.KeyID),
		zap.String("hold_id", h.ID), zap.String("what", "slot release of a create whose hold was released at its deadline"))
}

// StartTask takes one of the key's active-task slots; past max_active_tasks it answers 429. Keys
// without the limit hold a slot too, so that their usage always shows how many tasks are active
// (and a limit set later starts from the true number).
//
// The slot is taken without waiting for a disk sync: it is on disk with the task record the
// caller writes next (see storage.Coordination.ReserveCounter), or given back by Release. A
// crash between the two may keep a slot without a task, as a synced slot would.
func (a *Accountant) StartTask(ctx context.Context, id auth.Identity) (Slot, error) {
	return a.startTask(ctx, id, false)
}

// StartTaskFor is StartTask for a create of model. On a store shared by processes (Claims), the
// slot of a model without a price, whose create takes no hold to give the slot back should its
// process die (see SlotRef), is a claim (storage.SlotClaims) due at storage.DefaultHoldDeadline:
// the task's record ends it (put Slot.Claim in storage.Task.SlotClaim), Release ends it, and the
// hold reconciler gives the slot back if neither did by then.
func (a *Accountant) StartTaskFor(ctx context.Context, id auth.Identity, model string) (Slot, error) {
	_, priced := a.Prices.Price(model)
	return a.startTask(ctx, id, a.Claims != nil && !priced)
}

func (a *Accountant) startTask(ctx context.Context, id auth.Identity, claimed bool) (Slot, error) {
	limit := id.Limits.MaxActiveTasks
	if limit <= 0 {
		// No limit: the task is only counted, in the same counter (a reservation does not wait
		// for a sync), so that Finished's durable release always matches a counted slot.
		limit = -1
	}
	var claim *storage.SlotClaim
	var ok bool
	var err error
	if claimed {
		claim = &storage.SlotClaim{ID: "slot_" + storage.NewClaimToken(), Counter: ActiveCounter(id.KeyID), Deadline: a.clock().Add(storage.DefaultHoldDeadline)}
		ok, err = a.Claims.ClaimSlot(ctx, *claim, limit)
	} else {
		_, ok, err = a.Store.ReserveCounter(ctx, ActiveCounter(id.KeyID), 1, limit)
	}
	if err != nil {
		return Slot{}, err
	} else if !ok {
		return Slot{}, apierror.New(http.StatusTooManyRequests, "too_many_active_tasks",
			"this API key already has "+unfinishedTasks(limit)+"; retry when one has finished").WithRetryAfter(ActiveRetryAfter)
	}
	return Slot{Held: true, undo: &slotUndo{a: a, ctx: ctx, keyID: id.KeyID, claim: claim}}, nil
}

// TaskCreated counts a created task.
func (a *Accountant) TaskCreated(id auth.Identity) {
	a.Meter.add(1, usageTasks, id.KeyID, id.Account)
}

// MarkFinished is the change that finishes a task record, for use inside storage.UpdateTask:
// it sets Finished and reports whether this change did (false when the record was finished
// already). The caller whose stored change set it calls Finished, once.
func MarkFinished(t *storage.Task) bool {
	if t.Finished {
		return false
	}
	t.Finished = true
	return true
}

// Finished releases the active slot of a task that the caller has just marked finished (see
// MarkFinished). Call it once per task: only after the update that set Finished was stored.
//
// The task's hold (Task.HoldID) is settled from actual (the usage the upstream reported) when
// the task succeeded, and released otherwise; the record and the spend metric carry the amount.
// The hold is ended first: one that the reconciler released before the task's create bound it
// took the slot back with it (SlotOfReleasedHold), so the slot is not given back here.
//
// Finished is EndTaskHold and TaskEnded at once, for a record that keeps no pending effects
// (storage.Task.Effects); package videotask calls the two around the write that records them done.
func (a *Accountant) Finished(ctx context.Context, t storage.Task, status string, actual billing.Usage) {
	ended, _ := a.EndTaskHold(ctx, t, status, actual, false)
	a.TaskEnded(ctx, t, status, ended, t.Active)
}

// FinishedAtEstimate is Finished for a task that ended unsucceeded (expired) while its provider
// may still make it, and bill it (it last reported the task running, or did not confirm its
// cancel): the task's hold is charged its estimate, as a succeeded task that reports no usage is,
// rather than released. Call it once, as Finished, instead of it.
func (a *Accountant) FinishedAtEstimate(ctx context.Context, t storage.Task, status string) {
	ended, _ := a.EndTaskHold(ctx, t, status, billing.Usage{}, true)
	a.TaskEnded(ctx, t, status, ended, t.Active)
}

// EndedHold is how EndTaskHold ended a task's hold, for TaskEnded.
type EndedHold struct {
	amount billing.Money
	how    endedBy
}

// EndTaskHold settles or releases the hold of a finished task (see Finished); charge settles
// the hold of an unsucceeded task at its estimate (see FinishedAtEstimate). It may be called
// again for the same task (by a sweep that does the effects of a finish whose winner died): a
// hold already ended is left as it is. It reports false when the hold could not be ended (every
// write failed): it is still open, and the caller tries again later.
func (a *Accountant) EndTaskHold(ctx context.Context, t storage.Task, status string, actual billing.Usage, charge bool) (EndedHold, bool) {
	amount, how := a.settleTask(context.WithoutCancel(ctx), t, status, actual, charge)
	return EndedHold{amount: amount, how: how}, how != holdNotEnded
}

// TaskEnded gives back the active slot of a finished task whose hold EndTaskHold ended, when
// active (the record held it: call it only from the one stored change that cleared the
// record's Active), and records the finish (the usage record and the metric).
func (a *Accountant) TaskEnded(ctx context.Context, t storage.Task, status string, ended EndedHold, active bool) {
	ctx = context.WithoutCancel(ctx)
	rec := usage.Record{Event: usage.EventTaskFinished, Time: a.clock(), Account: t.Account, KeyID: t.KeyID,
		Endpoint: "/api/v3/contents/generations/tasks", Model: t.Model, Provider: t.Provider, Upstream: cmp.Or(t.Upstream, t.Provider),
		TaskID: t.ID, Status: status, TraceID: usage.TraceID(ctx), Amount: int64(ended.amount)}
	if active && ended.how != holdEndedByReconciler {
		a.addRetrying(ctx, ActiveCounter(t.KeyID), -1, zap.String("key_id", t.KeyID), zap.String("task_id", t.ID), zap.String("what", "slot release"))
	}
	metrics.TaskFinished(t.Provider, t.Model, status)
	a.Usage.Write(rec)
}

// SlotGivenBack clears the Active of the task record taskID, by compare-and-set, when BindTask
// reported that the reconciler released the task's hold, and with it the slot the record
// keeps: the record then no longer holds a slot, and its finish gives none back. A record
// finished meanwhile is left as it is (its finish found the hold released by the reconciler,
// and gave no slot back either).
func (a *Accountant) SlotGivenBack(ctx context.Context, taskID string) {
	_, err := storage.UpdateTask(context.WithoutCancel(ctx), a.Store, taskID, func(t *storage.Task) error {
		if t.Finished || !t.Active {
			return storage.ErrNoChange
		}
		t.Active = false
		return nil
	})
	if err != nil && !errors.Is(err, storage.ErrNoChange) {
		a.logger().Error("a task whose slot the reconciler gave back still holds it in its record; its finish gives it back a second time",
			zap.String("task_id", taskID), zap.Error(err))
	}
}

// unfinishedTasks is "1 unfinished task" or "n unfinished tasks".
func unfinishedTasks(n int64) string {
	if n == 1 {
		return "1 unfinished task"
	}
	return fmt.Sprintf("%d unfinished tasks", n)
}
