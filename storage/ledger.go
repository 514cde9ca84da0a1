package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/mediagw/mediagw/internal/money"
)

// Ledger keeps the money of accounts: a balance per account, holds taken against it for the
// requests and tasks in progress, and an append-only ledger of every change. Amounts are int64
// micro-units of the gateway's currency (1 unit = 1_000_000; package internal/money reads and
// prints them).
//
// The balance of an account is the sum of its entries' Amount: a hold is an entry of -amount, its
// settlement one of +(amount - charged), its release +amount, a credit +amount (an adjustment: a
// negative amount). Every entry records the balance after it. An account that was never credited
// is not Limited: its holds always fit (it is metered, not limited) and its balance goes negative
// by what it spends.
//
// Each hold ends once, by Settle or Release, whichever comes first; the other gets
// ErrHoldEnded and changes nothing. A hold that is not bound to a task (BindHold) and is still
// open at its Deadline is released by the reconciler, so that a hold whose request never ended
// (a killed process, a lost answer) does not stay taken.
//
// A write that fails (an error other than ErrInsufficient, ErrHoldEnded or ErrNotFound) may
// still have been made: a disk sync that failed after the write, too few Redis replicas. A Hold
// that failed so is released by the reconciler at its deadline; a Settle or Release that failed
// so stands, and a retry answers ErrHoldEnded, which the caller must take as done; a Credit
// retried with its idempotency key answers the entry it made.
//
// What a crash may take back of acknowledged writes is the backend's: Badger acknowledges a
// hold, and the end of a hold not bound to a task, before their disk sync (a machine crash may
// lose them, which loses a charge and never makes one twice), and keeps a transient hold
// (Hold.Transient) in memory only until it ends (a crash loses it as released); see
// badger_ledger_ops.go and docs/billing.md, "Crash semantics".
type Ledger interface {
	// Hold takes h.Amount from the account's balance and, when h.Budget has a Limit, from the
	// key's budget for the period containing now, atomically, and records the hold as open.
	// A Limited account whose balance is below h.Amount gets ErrInsufficient, a key budget that
	// would be exceeded ErrBudgetExceeded (which is ErrInsufficient too), and nothing changes.
	// So does a hold that would take any account's balance below -MaxAmount (an unlimited
	// account's too), past which a backend no longer computes it exactly.
	// Idempotent by h.ID: a second Hold with the same ID returns the first hold (as it now
	// stands) and its entry, and changes nothing. A transient hold (h.Transient) may be kept
	// out of Balance and LedgerPage until it ends; its entry then has no ID yet (see
	// Hold.Transient).
	Hold(ctx context.Context, h Hold, now time.Time) (Hold, LedgerEntry, error)
	// Spendable is the check a hold of 0 would make, without writing anything: a request that
	// holds nothing (a count of input tokens, a model without a price) may still not start
	// while its account is overdrawn or its key's budget is spent past its limit. It answers
	// ErrInsufficient when the account is Limited and its balance is below zero (a settlement
	// charged over its hold), ErrBudgetExceeded when budget has a Limit and what the key held
	// and was charged in the period containing now is above it, and nil otherwise: a balance
	// or a budget exactly used up admits a hold of 0.
	Spendable(ctx context.Context, account, keyID string, budget Budget, now time.Time) error
	// Settle ends an open hold by charging amount (0 or more). An amount above the hold is
	// charged in full: the balance may go below zero by the difference, and the entry's Note
	// says so; but never below -MaxAmount: the charge is then what takes the balance there (at
	// least the hold), which the entry's Charged tells. The rest of the hold returns to the
	// balance and to the key's budget (of the period the hold was taken in). Ending a hold that
	// has ended answers ErrHoldEnded and changes nothing; an unknown hold ErrNotFound.
	Settle(ctx context.Context, holdID string, amount int64, now time.Time) (LedgerEntry, error)
	// Release ends an open hold charging nothing; reason becomes the entry's Note. Errors as
	// for Settle.
	Release(ctx context.Context, holdID, reason string, now time.Time) (LedgerEntry, error)
	// ReleaseOverdue is the reconciler's Release: it releases the hold as Release does only if
	// the hold is not bound to a task and its deadline is before now. A hold that OverdueHolds
	// listed and that a task's create bound since then answers ErrHoldBound and changes
	// nothing: its task's finish ends it; one whose request renewed it since (RenewHold)
	// answers ErrHoldNotDue and changes nothing. The hold it releases is marked Reconciled, in
	// the same compare-and-set, and kept: every later Settle, Release or BindHold of it answers
	// ErrHoldReconciled, so that the caller knows that the reconciler's release (and what its
	// caller does with it, such as giving back a create's active-task slot) came first.
	ReleaseOverdue(ctx context.Context, holdID, reason string, now time.Time) (LedgerEntry, error)
	// RenewHold moves the deadline of an open, unbound hold to deadline when that is later than
	// the one it has, so that the reconciler leaves the hold to the request that still runs
	// (and releases it at the new deadline if that request's process dies). An earlier or equal
	// deadline changes nothing. HoldByID and OverdueHolds report the moved deadline. An ended
	// hold answers ErrHoldEnded, one bound to a task
	// ErrHoldBound (a task's end ends it; it has no deadline), an unknown one ErrNotFound.
	RenewHold(ctx context.Context, holdID string, deadline time.Time) error
	// BindHold ties an open hold to the task that carries it: the task's finish ends it, and
	// the reconciler no longer releases it at its deadline. The hold's Ref becomes taskID.
	// Binding it again to the same task does nothing; to another task answers ErrConflict; an
	// ended hold answers ErrHoldEnded, and one that the reconciler released ErrHoldReconciled
	// (which is ErrHoldEnded too).
	BindHold(ctx context.Context, holdID, taskID string) error
	// HoldByID returns a hold as it stands, or ErrNotFound. A hold that was both Transient and
	// NewID when it ended before its Deadline may be forgotten with its end (see Hold.NewID):
	// then ErrNotFound.
	HoldByID(ctx context.Context, holdID string) (Hold, error)
	// Credit adds c.Amount to the account's balance (a negative amount is an adjustment), once
	// per c.IdempotencyKey and account: a second Credit with the key returns the first one's
	// entry and changes nothing (whatever its amount). The first credit of an account, even of
	// 0, makes it Limited.
	Credit(ctx context.Context, c Credit, now time.Time) (LedgerEntry, error)
	// Balance returns the account's balance; an account without entries has a zero Balance.
	Balance(ctx context.Context, account string) (Balance, error)
	// LedgerPage lists an account's entries in the order they were made, those after the entry
	// whose ID is after ("" from the first), at most limit (at most MaxLedgerPage; 0 or less:
	// DefaultLedgerPage). next is the ID to pass as after for the next page, "" when there are
	// no more entries now.
	LedgerPage(ctx context.Context, account, after string, limit int) (entries []LedgerEntry, next string, err error)
	// LedgerPageNewest lists an account's entries newest first: those made before the entry
	// whose ID is before ("" from the newest), at most limit (as for LedgerPage). next is the ID
	// to pass as before for the next (older) page, "" when there are no older entries.
	LedgerPageNewest(ctx context.Context, account, before string, limit int) (entries []LedgerEntry, next string, err error)
	// OverdueHolds lists at most limit open, unbound holds whose Deadline is before now,
	// earliest deadline first. The reconciler releases each through ReleaseOverdue, so that
	// each is released once however many processes reconcile, and none that a task bound
	// since it was listed.
	OverdueHolds(ctx context.Context, now time.Time, limit int) ([]Hold, error)
}

// Errors of the ledger.
var (
	// ErrInsufficient: the account's balance (or the key's budget: ErrBudgetExceeded) does not
	// cover the hold.
	ErrInsufficient = errors.New("insufficient balance")
	// ErrBudgetExceeded: the key's budget for the period does not cover the hold. It is also
	// ErrInsufficient.
	ErrBudgetExceeded = fmt.Errorf("key budget exceeded: %w", ErrInsufficient)
	// ErrHoldEnded: the hold was settled or released already; nothing changed.
	ErrHoldEnded = errors.New("hold already ended")
	// ErrHoldReconciled: the hold was released by the reconciler (ReleaseOverdue) while it was
	// still unbound; nothing changed. It is also ErrHoldEnded.
	ErrHoldReconciled = fmt.Errorf("%w: released by the reconciler at its deadline", ErrHoldEnded)
	// ErrHoldBound: ReleaseOverdue found the hold bound to a task; nothing changed.
	ErrHoldBound = errors.New("hold bound to a task")
	// ErrHoldNotDue: ReleaseOverdue found the hold's deadline not yet passed (its request
	// renewed it); nothing changed.
	ErrHoldNotDue = errors.New("hold not yet due")
	// ErrBalanceBound: a credit would take the account's balance past ±MaxAmount, beyond which
	// the backends no longer compute it exactly (Redis scripts use doubles, Badger int64), now
	// or once the open holds are released (the balance plus what is held); nothing changed.
	ErrBalanceBound = errors.New("ledger: the credit would take the balance past its bound")
)

// MaxAmount is the largest amount (hold, charge or credit, in micro-units, either sign) the
// ledger takes: 2^53-1, about 9 billion units, which the Redis backend's scripts compute with
// exactly. A credit never takes a balance past it either way (ErrBalanceBound), nor leaves a
// balance that the release of its open holds would take past it.
const MaxAmount int64 = 1<<53 - 1

// boundedCharge is what a settlement of a hold of held, asked to charge charged, charges when the
// account's balance (its hold taken) is balance: charged, or less when it would take the balance
// below -MaxAmount (a usage report priced at the most one charge can be, on an account far in
// debt), down to the hold itself.
func boundedCharge(charged, held, balance int64) int64 {
	return min(charged, max(held, balance+held+MaxAmount))
}

// Page sizes of LedgerPage.
const (
	DefaultLedgerPage = 100
	MaxLedgerPage     = 1000
)

// DefaultHoldDeadline is how long after it is taken a hold that its caller does not end or
// bind should stay open before the reconciler releases it, when the caller has no better
// bound (the longest its request may take). Callers set Hold.Deadline; this is their default.
const DefaultHoldDeadline = 10 * time.Minute

// States of a hold.
const (
	HoldOpen     = "open"
	HoldSettled  = "settled"
	HoldReleased = "released"
)

// Kinds of ledger entries.
const (
	EntryHold    = "hold"
	EntrySettle  = "settle"
	EntryRelease = "release"
	EntryCredit  = "credit"
	EntryAdjust  = "adjust"
)

// Budget periods: UTC calendar periods.
const (
	BudgetTotal = ""      // one budget for all time
	BudgetDay   = "day"   // from 00:00 UTC to the next
	BudgetMonth = "month" // from the first of the month, 00:00 UTC
)

// Hold is money taken from an account's balance (and a key's budget) for a request or task in
// progress, until it is settled or released.
type Hold struct {
	// ID identifies the hold; Hold is idempotent by it. The caller chooses it (a request id).
	ID string `json:"id"`
	// Account pays; KeyID is the key that asked (whose budget is charged); Model is what for.
	Account string `json:"account"`
	KeyID   string `json:"key_id,omitempty"`
	Model   string `json:"model,omitempty"`
	// Ref is the request id, or the task id once the hold is bound to its task.
	Ref string `json:"ref,omitempty"`
	// Amount is the estimate held, in micro-units (0 to MaxAmount).
	Amount int64 `json:"amount"`
	// Budget is the key's budget (a zero Limit: none), checked atomically with the balance.
	Budget Budget `json:"budget"`
	// Deadline is when the reconciler releases the hold if it is still open and unbound.
	Deadline time.Time `json:"deadline"`
	// Created is when the hold was taken (the now of Hold); set by the ledger.
	Created time.Time `json:"created"`
	// Bound is set by BindHold (or given to Hold for a hold that never needs the reconciler).
	Bound bool `json:"bound,omitempty"`
	// Transient is given to Hold for a hold that the request which takes it ends (a
	// pass-through request's), or binds to the task it creates (CreateTask with the hold as
	// Task.HoldID): a backend may then keep it in memory only, and record it in the ledger
	// when it ends, its hold entry and its end entry together, or when it is bound (Badger
	// records and binds it in the commit of the task's record; Redis ignores Transient).
	// Until then such a hold counts against the balance and the key's budget of every later
	// Hold, HoldByID answers it and OverdueHolds lists it past its Deadline, but Balance and
	// LedgerPage show nothing of it: no entry, not in Amount nor in Held, so that the balance
	// they answer is the sum of the entries they answer. Hold's entry for it has no ID and a
	// zero BalanceAfter (set when it is recorded, with the next entry number of that time, and
	// the balance then). Lost in a crash, it is as released, with no entry; so is one whose
	// end failed to be written. BindHold records it at once.
	Transient bool `json:"transient,omitempty"`
	// NewID is given to Hold by a caller that made ID just now, at random, and never gave it
	// to Hold before: the ledger may then skip the look-up by ID on disk that makes Hold
	// idempotent (Badger does; a repeat of such an ID is the caller's mistake, and may be
	// taken as a second hold once the first has left memory). Not stored. A hold that is still
	// Transient when it ends before its Deadline (a request's, never bound, ended by its
	// request) may then be forgotten with its end, its entries being its only record (Badger
	// does): from then on HoldByID answers ErrNotFound for it, and a second Settle or Release
	// ErrHoldEnded while the end is being written, ErrNotFound once it is. One ended at or past
	// its Deadline (the reconciler's release) is kept, and answers ErrHoldEnded (ErrHoldReconciled
	// when the reconciler released it).
	NewID bool `json:"-"`
	// State is HoldOpen, HoldSettled or HoldReleased; set by the ledger.
	State string `json:"state"`
	// Reconciled is set (with State HoldReleased) when the reconciler released the hold
	// (ReleaseOverdue); set by the ledger.
	Reconciled bool `json:"reconciled,omitempty"`
}

// Budget is a key's spending limit, a sub-limit of its account's balance.
type Budget struct {
	// Limit is the most the key may have held and charged in one period, in micro-units; 0 is
	// no budget.
	Limit int64 `json:"limit,omitempty"`
	// Period is BudgetTotal, BudgetDay or BudgetMonth.
	Period string `json:"period,omitempty"`
}

// Credit is money added to (or, negative, taken from) an account's balance by an operator.
type Credit struct {
	Account string
	// Amount in micro-units; negative is an adjustment.
	Amount int64
	Note   string
	// IdempotencyKey makes the credit happen once; required.
	IdempotencyKey string
}

// Balance is an account's money.
type Balance struct {
	Account string `json:"account"`
	// Amount is the sum of the account's entries: what it may still spend when Limited (open
	// holds already taken out).
	Amount int64 `json:"amount"`
	// Held is the sum of the account's open holds (but the transient holds a backend keeps
	// out of the ledger until they end: Hold.Transient).
	Held int64 `json:"held"`
	// Limited is set by the account's first credit: from then on holds must fit the balance.
	Limited bool `json:"limited"`
}

// LedgerEntry is one change of an account's balance. Entries are never changed or removed.
type LedgerEntry struct {
	// ID orders the account's entries (a decimal count from 1); the cursor of LedgerPage.
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Account string    `json:"account"`
	KeyID   string    `json:"key_id,omitempty"`
	Model   string    `json:"model,omitempty"`
	// Ref is the request or task id.
	Ref string `json:"ref,omitempty"`
	// HoldID is the hold that a hold, settle or release entry is about.
	HoldID string `json:"hold_id,omitempty"`
	// Kind is EntryHold, EntrySettle, EntryRelease, EntryCredit or EntryAdjust.
	Kind string `json:"kind"`
	// Amount is the change of the balance; BalanceAfter the balance after it.
	Amount       int64 `json:"amount"`
	BalanceAfter int64 `json:"balance_after"`
	// Charged is what a settlement charged (the hold's amount less the entry's Amount).
	Charged int64  `json:"charged,omitempty"`
	Note    string `json:"note,omitempty"`
}

// validHold checks what Hold is given.
func validHold(h *Hold) error {
	switch {
	case h.ID == "":
		return errors.New("ledger: a hold needs an id")
	case h.Account == "":
		return errors.New("ledger: a hold needs an account")
	case h.Amount < 0 || h.Amount > MaxAmount:
		return fmt.Errorf("ledger: hold amount %d out of range", h.Amount)
	case h.Budget.Limit < 0 || h.Budget.Limit > MaxAmount:
		return fmt.Errorf("ledger: budget limit %d out of range", h.Budget.Limit)
	case h.Budget.Limit > 0 && h.KeyID == "":
		return errors.New("ledger: a budget needs a key id")
	case !h.Bound && h.Deadline.IsZero():
		return errors.New("ledger: a hold that is not bound to a task needs a deadline")
	}
	switch h.Budget.Period {
	case BudgetTotal, BudgetDay, BudgetMonth:
		return nil
	}
	return fmt.Errorf("ledger: unknown budget period %q (day, month or none)", h.Budget.Period)
}

func validCredit(c Credit) error {
	switch {
	case c.Account == "":
		return errors.New("ledger: a credit needs an account")
	case c.IdempotencyKey == "":
		return errors.New("ledger: a credit needs an idempotency key")
	case c.Amount < -MaxAmount || c.Amount > MaxAmount:
		return fmt.Errorf("ledger: credit amount %d out of range", c.Amount)
	case !utf8.ValidString(c.Note):
		// Redis keeps entries as JSON, which has no other text: both stores refuse it alike.
		return errors.New("ledger: a credit's note must be UTF-8 text")
	}
	return nil
}

func validCharge(amount int64) error {
	if amount < 0 || amount > MaxAmount {
		return fmt.Errorf("ledger: charge %d out of range", amount)
	}
	return nil
}

// budgetPeriod names the budget period containing now, and returns when the period ends (zero
// for BudgetTotal).
func budgetPeriod(period string, now time.Time) (name string, end time.Time) {
	var buf [16]byte
	b, end := appendBudgetPeriod(buf[:0], period, now)
	return string(b), end
}

// appendBudgetPeriod appends budgetPeriod's name to b (the ledger's hot path makes it with the
// counter's key, in one allocation).
func appendBudgetPeriod(b []byte, period string, now time.Time) ([]byte, time.Time) {
	now = now.UTC()
	switch period {
	case BudgetDay:
		start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		return start.AppendFormat(append(b, 'd'), "2006-01-02"), start.AddDate(0, 0, 1)
	case BudgetMonth:
		start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start.AppendFormat(append(b, 'm'), "2006-01"), start.AddDate(0, 1, 0)
	}
	return append(b, "all"...), time.Time{}
}

// budgetKeep is how long a period's budget counter is kept past the period's end: a hold taken
// in it may settle after it ended.
const budgetKeep = 48 * time.Hour

// overNote is the Note of a settlement that charged more than was held.
func overNote(held, charged int64) string {
	return "charged " + money.Format(charged-held) + " over the hold of " + money.Format(held)
}

// clampPage is the page size LedgerPage uses for limit.
func clampPage(limit int) int {
	if limit <= 0 {
		return DefaultLedgerPage
	}
	return min(limit, MaxLedgerPage)
}
