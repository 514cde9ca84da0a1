package accounting

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/storage"
)

// The 402 answers of a hold that does not fit (spec §7.1: balance or quota insufficient).
var (
	errBalance = apierror.New(http.StatusPaymentRequired, "insufficient_quota",
		"the account's balance does not cover the estimated cost of this request; top it up, or ask for less")
	errBudget = apierror.New(http.StatusPaymentRequired, "insufficient_quota",
		"the API key's budget does not cover the estimated cost of this request in this period")
	// errOverdrawn and errBudgetSpent answer a request that holds nothing (Spendable).
	errOverdrawn = apierror.New(http.StatusPaymentRequired, "insufficient_quota",
		"the account's balance is below zero; top it up to make requests again")
	errBudgetSpent = apierror.New(http.StatusPaymentRequired, "insufficient_quota",
		"the API key's budget for this period is spent")
	// errPastBound answers an estimate past the most one hold can be (storage.MaxAmount), on any
	// account: a request asking for trillions of tokens or images, which no balance covers and
	// an unlimited account's metering could not record exactly.
	errPastBound = apierror.New(http.StatusPaymentRequired, "insufficient_quota",
		"the estimated cost of this request is past the most one request may hold ("+money.Format(storage.MaxAmount)+"); ask for less (max_tokens, n, seconds)")
)

// Hold is money held for one request or task: the estimate of what it may cost, taken from the
// account's balance and the key's budget when it was accepted. It ends once, by Settle (charge
// what was used) or Release (charge nothing); whichever comes second does nothing. A zero Hold
// (a model without a price) holds nothing, and its Settle and Release do nothing.
type Hold struct {
	// ID is the ledger hold's id; "" when nothing was held.
	ID string
	// Estimate is the amount held and the usage it assumed.
	Estimate billing.Estimate
	end      *holdEnd
}

// holdEnd is what ending a hold needs, once.
type holdEnd struct {
	done atomic.Bool
	a    *Accountant
	// ctx is the request's context; endHold ends the hold without its cancellation.
	ctx   context.Context
	keyID string
	owner holdOwner
	// price settles the hold from the answer's usage; nil: at the amount held (HoldCalls).
	price *billing.Price
	// tool, when not nil, is the part of the hold that pays for the images a Responses
	// request's image_generation tool may make, at its image model's price (see
	// HoldWithToolImages).
	tool *toolImagesHold
	// reconciled is set when Settle or Release found the hold released by the reconciler.
	reconciled atomic.Bool
	// holdRenewal is its place in the Accountant's list of running holds, whose deadlines are
	// moved on while their requests run (renew).
	holdRenewal
}

// HoldFor holds the estimate of a request for model against the identity's account and key
// (see storage.Ledger.Hold); ref is the request id. The request ends the hold (Settle or
// Release) before it returns: the hold is transient (storage.Hold.Transient), which a ledger
// may keep in memory until it ends. A hold that does not fit is a 402 insufficient_quota. A
// model without a price holds nothing, and is refused as a hold is while the account is
// overdrawn (see Spendable). While the request runs its hold's deadline is moved on
// (renewed every third of deadline to deadline from then), so that a request that outlasts
// deadline (a long stream) is still settled by its own end; a hold that is not ended because
// its process died is released by the reconciler at most deadline after its last renewal.
func (a *Accountant) HoldFor(ctx context.Context, id auth.Identity, model, ref string, estimate func(*billing.Price) billing.Estimate, deadline time.Duration) (Hold, error) {
	h, err := a.holdOnce(ctx, id, model, ref, estimate, deadline)
	if err == nil && h.end != nil {
		h.end.renew(h.ID, deadline)
	}
	return h, err
}

// holdOnce is HoldFor without the renewals.
func (a *Accountant) holdOnce(ctx context.Context, id auth.Identity, model, ref string, estimate func(*billing.Price) billing.Estimate, deadline time.Duration) (Hold, error) {
	price, ok := a.Prices.Price(model)
	if !ok {
		return Hold{}, a.Spendable(ctx, id)
	}
	return a.hold(ctx, id, model, ref, estimate(price), price, deadline)
}

// HoldForTask is HoldFor for a task that will carry the hold beyond the request that creates
// it: the task's record names it (storage.Task.HoldID), and the create that stores the record
// binds it (BindTask binds it on a store that did not). Until then it is transient, as a
// request's hold: a ledger may keep it in memory, and record it with the create that binds it
// (Badger does, in the same commit as the task's record) or with its end when the create
// fails. A process that dies before the create loses it as released, which is what the
// reconciler does to an unbound hold at its deadline. Its deadline is not renewed: a create
// ends or binds it well within deadline (handlers/videotask bounds its upstream calls to half
// of it), and one that stalls past it is released by the reconciler, slot and all.
func (a *Accountant) HoldForTask(ctx context.Context, id auth.Identity, model, ref string, estimate func(*billing.Price) billing.Estimate, deadline time.Duration) (Hold, error) {
	return a.holdOnce(ctx, id, model, ref, estimate, deadline)
}

// A Call is one model call of a request that carries several in one body (a Message Batches
// create): its model, and what its own body says about how much it may use.
type Call struct {
	Model   string
	Request billing.Request
}

// HoldCalls holds, in one hold, the sum of the estimates of the calls one request carries, each
// at its own model's price (a call whose model has no price adds nothing; when none has, nothing
// is held). The sum is checked against the balance and the key's budget as one amount, so a
// request whose calls fit one by one but not together is a 402. model names the hold in the
// ledger. Such an answer (a batch's) reports no usage: the hold settles at the amount held. The
// request ends the hold: it is transient, and renewed while the request runs, as HoldFor's.
func (a *Accountant) HoldCalls(ctx context.Context, id auth.Identity, model, ref string, calls []Call, deadline time.Duration) (Hold, error) {
	var est billing.Estimate
	priced := false
	for _, c := range calls {
		price, ok := a.Prices.Price(c.Model)
		if !ok {
			continue
		}
		priced = true
		one := price.EstimateRequest(c.Request)
		est.Amount += min(one.Amount, math.MaxInt64-est.Amount) // saturating, never wrapping
		est.Usage.Requests += one.Usage.Requests
		est.Usage.InputTokens += one.Usage.InputTokens
		est.Usage.OutputTokens += one.Usage.OutputTokens
		est.Usage.Images += one.Usage.Images
	}
	if !priced {
		return Hold{}, a.Spendable(ctx, id)
	}
	h, err := a.hold(ctx, id, model, ref, est, nil, deadline)
	if err == nil {
		h.end.renew(h.ID, deadline)
	}
	return h, err
}

// hold writes the ledger hold of est, transient (every hold starts so: a request's ends with the
// request, a task's until the task's create binds it). price settles it from the answer's usage;
// nil settles it at the amount held.
func (a *Accountant) hold(ctx context.Context, id auth.Identity, model, ref string, est billing.Estimate, price *billing.Price, deadline time.Duration) (Hold, error) {
	now := a.clock()
	budget, none := id.Limits.SpendingLimit()
	if none && est.Amount > 0 {
		return Hold{}, errBudget // a quota of 0: the key may spend nothing
	}
	if est.Amount > billing.Money(storage.MaxAmount) {
		return Hold{}, errPastBound
	}
	h := storage.Hold{ID: newHoldID(), NewID: true, Account: id.Account, KeyID: id.KeyID, Model: model, Ref: ref,
		Amount: int64(est.Amount), Budget: budget, Deadline: now.Add(deadline), Transient: true}
	_, _, err := a.Store.Hold(ctx, h, now)
	switch {
	case errors.Is(err, storage.ErrBudgetExceeded):
		return Hold{}, errBudget
	case errors.Is(err, storage.ErrInsufficient):
		return Hold{}, errBalance
	case err != nil:
		return Hold{}, err
	}
	return Hold{ID: h.ID, Estimate: est, end: &holdEnd{a: a, ctx: ctx, keyID: id.KeyID, owner: holdOwner{account: id.Account, model: model}, price: price}}, nil
}

// Spendable refuses a request that holds nothing (a count of input tokens, a model without a
// price) while the identity's account is overdrawn or its key's budget is spent past its limit,
// with the 402 of a hold that does not fit: such an account's next requests get 402 until it
// is topped up (see storage.Ledger.Spendable), whatever they would cost.
func (a *Accountant) Spendable(ctx context.Context, id auth.Identity) error {
	budget, _ := id.Limits.SpendingLimit()
	err := a.Store.Spendable(ctx, id.Account, id.KeyID, budget, a.clock())
	switch {
	case errors.Is(err, storage.ErrBudgetExceeded):
		return errBudgetSpent
	case errors.Is(err, storage.ErrInsufficient):
		return errOverdrawn
	}
	return err
}

// EncodedPrice is the price the hold was taken at, as billing encodes it, for the record of the
// task that carries it (storage.Task.HoldPrice): SettleTask settles the task at it. "" for a
// hold that settles at the amount held (HoldCalls) or holds nothing.
func (h Hold) EncodedPrice() string {
	if h.end == nil || h.end.price == nil {
		return ""
	}
	return h.end.price.Encode()
}

// Settle ends the hold charging what actual used (the estimate standing in for what it does not
// report), and returns the amount charged; 0 when the hold had ended already or holds nothing.
// A hold of tool images (HoldWithToolImages) charges them as held: see SettleWithImages.
func (h Hold) Settle(actual billing.Usage) billing.Money {
	return h.SettleWithImages(actual, billing.MadeImages{})
}

// SettleWithImages is Settle, which also charges the images that a Responses request's
// image_generation tool made, as the answer reports them (made), when the hold holds for them
// (HoldWithToolImages); they are charged as held when the answer does not report them, and
// never past the request's max_tool_calls.
func (h Hold) SettleWithImages(actual billing.Usage, made billing.MadeImages) billing.Money {
	e := h.end
	if e == nil || !e.done.CompareAndSwap(false, true) {
		return 0
	}
	e.stopRenewal()
	amount := h.Estimate.Amount // a hold of several calls settles at the amount held
	if e.price != nil {
		amount = e.price.Settle(h.Estimate.Usage, actual)
		if e.tool != nil {
			amount = addMoney(amount, e.tool.price.SettleToolImages(e.tool.estimate.Usage, made, e.tool.maxCalls))
		}
		amount = withinLedger(amount)
	}
	how, amount := e.a.endHold(e.ctx, h.ID, amount, "", e.owner)
	if how != holdEndedHere {
		e.reconciled.Store(how == holdEndedByReconciler)
		return 0
	}
	e.a.meterSpent(e.keyID, e.owner.account, amount)
	return amount
}

// Release ends the hold charging nothing: the upstream refused the request, or it never left.
func (h Hold) Release(reason string) {
	if e := h.end; e != nil && e.done.CompareAndSwap(false, true) {
		e.stopRenewal()
		how, _ := e.a.endHold(e.ctx, h.ID, -1, reason, e.owner)
		e.reconciled.Store(how == holdEndedByReconciler)
	}
}

// Reconciled reports whether Settle or Release (called before) found the hold released by the
// reconciler: the request outlived its hold's deadline, and a slot-taking create's slot went
// back with the hold (SlotOfReleasedHold). The caller then keeps no record holding that slot:
// see Slot.GivenBack and SlotGivenBack.
func (h Hold) Reconciled() bool { return h.end != nil && h.end.reconciled.Load() }

// StatusDeleted is the status a task finishes with (Finished, SettleTask) when its provider no
// longer knows it after a DELETE the provider accepted while the gateway last saw it running:
// it may have finished, and been billed, before the DELETE deleted it. It is charged as a success
// that reported no usage: its estimate.
const StatusDeleted = "deleted"

// SettleTask ends the hold a finished task carries (storage.Task.HoldID): a succeeded task is
// charged its usage at the price it was accepted at (storage.Task.HoldPrice; the estimate
// standing in for what the upstream did not report), and so is one StatusDeleted; any other is
// released. A reload of the
// prices meanwhile changes nothing of it. (A record without that price, written before it was
// kept, is priced as the table prices its model now, or charged the amount held when the model
// has no price any more.)
// Call it once, from the update that set the task's Finished. It returns the amount charged.
func (a *Accountant) SettleTask(ctx context.Context, t storage.Task, status string, actual billing.Usage) billing.Money {
	amount, _ := a.settleTask(ctx, t, status, actual, false)
	return amount
}

// settleTask is SettleTask, which also reports how the hold ended (holdEndedByReconciler: the
// reconciler released it before the task's create bound it, and gave back the create's slot).
// With charge, a task that did not succeed is settled as a succeeded one (at actual, the estimate
// standing in for what it does not report) rather than released.
func (a *Accountant) settleTask(ctx context.Context, t storage.Task, status string, actual billing.Usage, charge bool) (billing.Money, endedBy) {
	if t.HoldID == "" {
		return 0, holdEndedHere
	}
	owner := holdOwner{taskID: t.ID, account: t.Account, model: t.Model}
	if status != "succeeded" && status != StatusDeleted && !charge {
		how, _ := a.endHold(ctx, t.HoldID, -1, "task "+status, owner)
		return 0, how
	}
	amount := billing.Money(t.HoldAmount)
	if price, ok := a.acceptedPrice(t, owner); ok {
		estimated, err := billing.DecodeUsage(t.HoldUsage)
		if err != nil {
			a.logger().Error("a task's estimate does not decode; it is settled at the amount held", append(owner.fields(), zap.Error(err))...)
		} else {
			amount = withinLedger(price.Settle(estimated, actual))
		}
	}
	how, amount := a.endHold(ctx, t.HoldID, amount, "", owner)
	if how != holdEndedHere {
		return 0, how
	}
	a.meterSpent(t.KeyID, t.Account, amount)
	return amount, holdEndedHere
}

// acceptedPrice is the price task t was accepted at (see SettleTask), and whether it has one to
// settle at; a recorded price that does not decode is logged, and the task charged the amount
// held.
func (a *Accountant) acceptedPrice(t storage.Task, owner holdOwner) (*billing.Price, bool) {
	if t.HoldPrice == "" {
		return a.Prices.Price(t.Model)
	}
	price, err := billing.DecodePrice(t.Model, t.HoldPrice)
	if err != nil {
		a.logger().Error("a task's price does not decode; it is settled at the amount held", append(owner.fields(), zap.Error(err))...)
		return nil, false
	}
	return price, true
}

// withinLedger is amount, or storage.MaxAmount when it is more: the most one charge of the
// ledger can be. A settlement past it (a usage report no real request reaches) charges it,
// rather than failing to end the hold, which would leave a request free and a task's hold open
// for good.
func withinLedger(amount billing.Money) billing.Money {
	return min(amount, billing.Money(storage.MaxAmount))
}

// holdOwner names what a hold is for in the log lines about it: the task (none for a request's
// hold), the account and the model. It is turned into log fields only when a line is written.
type holdOwner struct{ taskID, account, model string }

func (o holdOwner) fields() []zap.Field {
	fields := make([]zap.Field, 0, 5)
	if o.taskID != "" {
		fields = append(fields, zap.String("task_id", o.taskID))
	}
	return append(fields, zap.String("account", o.account), zap.String("model", o.model))
}

// endedBy is who ended a hold, as endHold found it.
type endedBy int

const (
	// holdEndedHere: this call ended the hold.
	holdEndedHere endedBy = iota
	// holdEndedElsewhere: another caller had ended it.
	holdEndedElsewhere
	// holdEndedByReconciler: the reconciler had released it, unbound (storage.ErrHoldReconciled);
	// a slot-taking create's slot went back with it (SlotOfReleasedHold).
	holdEndedByReconciler
	// holdNotEnded: every attempt failed (logged); the hold is still open.
	holdNotEnded
)

// endHold settles a hold at amount, or releases it when amount is negative, retrying a failed
// write a few times, whether or not ctx was cancelled meanwhile (its values, such as the trace,
// are kept). It reports whether this call ended the hold, or who did: another caller (another
// instance, or every attempt failed, logged: the reconciler releases an unbound hold at its
// deadline; a bound one stays open and is reported) or the reconciler. charged is what a
// settlement this call made charged: amount, or less when the ledger bounded it (a charge that
// would take the balance below -storage.MaxAmount; see storage.Ledger.Settle).
func (a *Accountant) endHold(ctx context.Context, holdID string, amount billing.Money, reason string, owner holdOwner) (how endedBy, charged billing.Money) {
	ctx = context.WithoutCancel(ctx)
	var err error
	for attempt := range giveBackRetries {
		var e storage.LedgerEntry
		if amount < 0 {
			e, err = a.Store.Release(ctx, holdID, reason, a.clock())
		} else {
			e, err = a.Store.Settle(ctx, holdID, int64(amount), a.clock())
		}
		switch {
		case err == nil && amount >= 0:
			return holdEndedHere, billing.Money(e.Charged)
		case err == nil:
			return holdEndedHere, 0
		case errors.Is(err, storage.ErrHoldReconciled):
			// Never this caller's own earlier attempt: the reconciler releases open holds only.
			return holdEndedByReconciler, 0
		case errors.Is(err, storage.ErrHoldEnded):
			// Ended already, by another caller or by this one's earlier attempt whose answer
			// was lost: the ledger has exactly one end either way.
			if attempt > 0 {
				return holdEndedHere, max(amount, 0) // what it charged is in the ledger
			}
			return holdEndedElsewhere, 0
		case errors.Is(err, storage.ErrNotFound):
			a.logger().Error("ending a hold the ledger does not know", append(owner.fields(), zap.String("hold_id", holdID))...)
			return holdEndedElsewhere, 0
		}
		time.Sleep(time.Duration(50<<attempt) * time.Millisecond)
	}
	a.logger().Error("ending a hold failed; it stays open", append(owner.fields(), zap.String("hold_id", holdID), zap.Error(err))...)
	return holdNotEnded, 0
}

// meterSpent counts money a settlement charged in the key's and the account's usage.
func (a *Accountant) meterSpent(keyID, account string, amount billing.Money) {
	if amount > 0 && a.Meter != nil {
		a.Meter.add(int64(amount), usageSpent, keyID, account)
	}
}

// BindTask ties a task's hold to the task, so that the reconciler leaves it to the task's finish.
// A hold the task's finish ended first needs no binding. Call it after the task's create even
// on a store whose create bound the hold (Badger's): binding it again does nothing but tell the
// ledger that the create is done with it.
//
// It reports whether the reconciler released the hold first (storage.ErrHoldReconciled: the
// create outlived the hold's deadline). That release gave back the create's active-task slot
// (SlotOfReleasedHold), which the task's record also keeps: the caller then calls SlotGivenBack,
// so that the slot is given back once. (The task's finish checks the same answer, for a finish
// that comes first: see Finished.)
func (a *Accountant) BindTask(ctx context.Context, holdID, taskID string) (reconciled bool) {
	if holdID == "" {
		return false
	}
	err := a.Store.BindHold(context.WithoutCancel(ctx), holdID, taskID)
	switch {
	case errors.Is(err, storage.ErrHoldReconciled):
		a.logger().Warn("a task's create outlived its hold's deadline: the reconciler released the hold, so the task runs uncharged",
			zap.String("hold_id", holdID), zap.String("task_id", taskID))
		return true
	case err != nil && !errors.Is(err, storage.ErrHoldEnded):
		a.logger().Error("binding a hold to its task failed; the reconciler may release it at its deadline",
			zap.String("hold_id", holdID), zap.String("task_id", taskID), zap.Error(err))
	}
	return false
}

// newHoldID is a random hold id: "hold_" and 24 hex digits (96 random bits, so that ids taken
// by several instances sharing a store never meet; storage.Hold.NewID relies on it). Each id is
// read from crypto/rand when it is made, never from bytes read ahead: two gateways resumed
// from one snapshot of a virtual machine would otherwise hand out the same ids from the bytes
// the snapshot holds.
func newHoldID() string {
	const prefix = "hold_"
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	var id [len(prefix) + 2*len(b)]byte
	copy(id[:], prefix)
	hex.Encode(id[len(prefix):], b[:])
	return string(id[:])
}
