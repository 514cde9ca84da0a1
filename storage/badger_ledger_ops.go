package storage

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The ledger's operations on Badger. Each is decided in the book (badger_book.go) under its
// account's lock, with no read of Badger once the account, hold and budget counter are in
// memory; its writes join the ledger's group commit (badger_book_batch.go), and it answers once
// they are committed.
//
// A credit, a binding and the end of a hold bound to a task then wait for a disk sync as well
// (shared with the other writers). A hold, and the end of a hold that is not bound to a task,
// are lazy: acknowledged once committed, synced within lazySyncDelay or by the next durable
// commit. A SIGKILL loses none of them (Badger's log is a file mapped into memory); a machine
// crash may lose those of its last lazySyncDelay, which leaves a lost hold as released and a
// lost end's hold open for the reconciler, so that a charge may be lost, never made twice
// (docs/billing.md, "Crash semantics"). An operation whose batch fails to commit answers the
// error and changed nothing that a later read sees.

// record adds e to the account's (locked) ledger: it fills in e's ID, Account and BalanceAfter,
// and adds it to op's entries, which the batch writes in the account's block.
func (a *bookAccount) record(op *ledgerOp, e *LedgerEntry) {
	a.bal.Amount += e.Amount
	a.bal.Entries++
	e.ID = strconv.FormatUint(a.bal.Entries, 10)
	e.Account = a.name
	e.BalanceAfter = a.bal.Amount + a.transient
	op.addEntry(*e, a.bal.Entries)
}

// maxHoldLookups bounds how often Hold follows a hold ID to another account's hold (the same
// ID taken for another account meanwhile).
const maxHoldLookups = 3

func (b *Badger) Hold(ctx context.Context, h Hold, now time.Time) (Hold, LedgerEntry, error) {
	if err := validHold(&h); err != nil {
		return Hold{}, LedgerEntry{}, err
	}
	account := h.Account
	for range maxHoldLookups {
		a, err := b.ledger.lockAccount(b.db, account)
		if err != nil {
			return Hold{}, LedgerEntry{}, err
		}
		held, entry, batch, other, err := b.decideHold(a, h, now, false)
		a.mu.Unlock()
		switch {
		case other != "":
			account = other // the ID is another account's hold: answer it from there
			continue
		case err == nil && batch != nil:
			err = b.waitBatch(batch)
		}
		if err != nil {
			return Hold{}, LedgerEntry{}, err
		}
		return held, entry, nil
	}
	return Hold{}, LedgerEntry{}, errors.New("ledger: the hold's id is being taken for several accounts at once")
}

// decideHold takes the hold h in the account a (locked), or answers the hold taken before with
// its ID and the batch writing it (nil: committed). other names another account whose hold
// has the ID. With again, h is a transient hold accepted before and lost by a failed batch
// (holdAgain): it is taken whatever the balance and the key's budget now leave, as what was
// decided since its loss was decided without it, and stays transient.
func (b *Badger) decideHold(a *bookAccount, h Hold, now time.Time, again bool) (Hold, LedgerEntry, *ledgerBatch, string, error) {
	prior, err := b.priorHold(a, h)
	switch {
	case err == nil && prior.rec.Hold.Account != a.name:
		return Hold{}, LedgerEntry{}, nil, prior.rec.Hold.Account, nil
	case err == nil:
		return prior.rec.Hold, prior.entry(), prior.batch, "", nil
	case !errors.Is(err, ErrNotFound):
		return Hold{}, LedgerEntry{}, nil, "", err
	}
	if !again && (a.bal.Limited && a.bal.Amount < h.Amount || a.bal.Amount-h.Amount < -MaxAmount) {
		return Hold{}, LedgerEntry{}, nil, "", ErrInsufficient // short, or past the ledger's bound
	}
	if !again && h.Transient && a.bal.Limited && a.bal.Amount-a.freed.Load() < h.Amount {
		// It fits only in what ends not yet committed gave back: recorded, it is written
		// after them and fails with them, where a transient hold would outlive their failure
		// and leave the account holding more than its balance.
		h.Transient = false
	}
	nh := &bookHold{acct: a, epoch: a.epoch.Load(), rec: holdRecord{Hold: h}}
	nh.rec.Hold.State, nh.rec.Hold.Created = HoldOpen, now
	if other, ok := b.ledger.claim(nh); !ok {
		return Hold{}, LedgerEntry{}, nil, other, nil
	}
	var counter string // the budget counter's write, when budget is set
	var budget *bookBudget
	var bw budgetWrite
	if h.Budget.Limit > 0 {
		counted := &nh.rec.Hold
		if again {
			unbounded := nh.rec.Hold
			unbounded.Budget.Limit = MaxAmount // no check, and transient it stays
			counted = &unbounded
		}
		counter, budget, bw, err = b.ledger.holdBudget(b.db, counted, now, a.epoch.Load())
		if err != nil {
			b.ledger.unclaim(nh)
			return Hold{}, LedgerEntry{}, nil, "", err
		}
		nh.rec.Budget = counter
		nh.rec.Hold.Transient = counted.Transient
		h.Transient = nh.rec.Hold.Transient
	}
	entry := nh.entry() // Time now (Created), unrecorded
	if h.Transient {
		// In memory only, until its end records it: nothing to write, nor to wait for.
		a.takeTransient(h.Amount)
		return nh.rec.Hold, entry, nil, "", nil
	}
	a.bal.Held += h.Amount
	op := ledgerOp{acct: a, lazy: true, counter: counter, budget: budget, bw: bw, writes: make([]bookWrite, 0, 2)}
	a.record(&op, &entry)
	nh.rec.EntryN, nh.after = a.bal.Entries, entry.BalanceAfter
	if !h.Bound {
		op.writes = append(op.writes, bookWrite{key: openHoldKey(nh.rec.Hold), val: []byte{}})
	}
	op.writes = append(op.writes, bookWrite{key: holdKey(h.ID), val: nh.rec.encode()})
	op.balance, op.hasBalance = a.recorded(), true
	batch, err := b.ledger.add(&op)
	if err != nil {
		return Hold{}, LedgerEntry{}, nil, "", err
	}
	nh.batch = batch
	return nh.rec.Hold, entry, batch, "", nil
}

// priorHold returns the hold taken before with h's ID, or ErrNotFound. A hold with a NewID is
// looked for in memory only: no hold on disk can have its ID, and a look-up of a key that is
// missing reads every level of Badger's tree (about 5 µs per request, more under load).
func (b *Badger) priorHold(a *bookAccount, h Hold) (*bookHold, error) {
	if !h.NewID {
		return b.ledger.lockedHold(b.db, a, h.ID)
	}
	if prior, ok := b.ledger.heldInMemory(a, h.ID); ok {
		return prior, nil
	}
	return nil, ErrNotFound
}

// recordHold records the hold entry of h, a transient hold of the account a (locked), at the
// next entry number, in op.
func (k *ledgerBook) recordHold(op *ledgerOp, a *bookAccount, h *bookHold) {
	e := h.entry()
	a.recordTransient(h.rec.Hold.Amount)
	a.record(op, &e)
	h.rec.EntryN, h.after = a.bal.Entries, e.BalanceAfter
	if h.stored != nil { // an entry kept before it was recorded takes what recording gave it
		*h.stored = e
	}
}

// transientAmount is the amount of a transient hold that Badger's budget counter leaves out.
func transientAmount(h Hold) int64 {
	if h.Transient {
		return h.Amount
	}
	return 0
}

func (b *Badger) Settle(ctx context.Context, holdID string, amount int64, now time.Time) (LedgerEntry, error) {
	if err := validCharge(amount); err != nil {
		return LedgerEntry{}, err
	}
	return b.endHold(holdID, amount, EntrySettle, "", now, false)
}

func (b *Badger) Release(ctx context.Context, holdID, reason string, now time.Time) (LedgerEntry, error) {
	return b.endHold(holdID, 0, EntryRelease, reason, now, false)
}

func (b *Badger) ReleaseOverdue(ctx context.Context, holdID, reason string, now time.Time) (LedgerEntry, error) {
	return b.endHold(holdID, 0, EntryRelease, reason, now, true)
}

// endHold settles (charging charged) or releases an open hold; when unboundOnly (the
// reconciler's release), a hold bound to a task (ErrHoldBound) or not yet past its deadline at
// now (ErrHoldNotDue) is left open.
func (b *Badger) endHold(holdID string, charged int64, kind, note string, now time.Time, unboundOnly bool) (LedgerEntry, error) {
	a, h, err := b.lockHold(holdID)
	if err != nil {
		return LedgerEntry{}, err
	}
	switch {
	case h.rec.Hold.State != HoldOpen:
		a.mu.Unlock()
		return LedgerEntry{}, endedError(h.rec.Hold)
	case unboundOnly && h.rec.Hold.Bound:
		a.mu.Unlock()
		return LedgerEntry{}, ErrHoldBound
	case unboundOnly && !h.rec.Hold.Deadline.Before(now):
		a.mu.Unlock()
		return LedgerEntry{}, ErrHoldNotDue
	}
	rec := h.rec
	held := rec.Hold.Amount
	charged = boundedCharge(charged, held, a.bal.Amount)
	op := ledgerOp{acct: a, lazy: !rec.Hold.Bound, ended: h}
	if rec.Budget != "" {
		op.counter = rec.Budget
		op.budget, op.bw, op.budgetFreed, err = b.ledger.endBudget(b.db, rec.Budget, charged-held, transientAmount(rec.Hold), a.epoch.Load())
		if err != nil {
			a.mu.Unlock()
			return LedgerEntry{}, err
		}
	}
	if rec.Hold.Transient {
		// Recorded now, with its end: its hold entry first.
		b.ledger.recordHold(&op, a, h)
	}
	a.bal.Held -= held
	op.freed = max(held-charged, 0)
	e := LedgerEntry{Time: now, KeyID: rec.Hold.KeyID, Model: rec.Hold.Model, Ref: rec.Hold.Ref, HoldID: holdID, Kind: kind, Amount: held - charged, Note: note}
	if kind == EntrySettle {
		e.Charged = charged
		if charged > held {
			e.Note = overNote(held, charged)
		}
		rec.Hold.State = HoldSettled
	} else {
		rec.Hold.State = HoldReleased
		rec.Hold.Reconciled = unboundOnly // the reconciler's release: later ends and binds are told
	}
	a.record(&op, &e)
	if !rec.Hold.Bound && !rec.Hold.Transient {
		op.writes = append(op.writes, bookWrite{key: openHoldKey(rec.Hold), del: true})
	}
	rec.EntryN = h.rec.EntryN // set by recordHold
	if !rec.Hold.Transient || !rec.Hold.NewID || !now.Before(rec.Hold.Deadline) || unboundOnly {
		// A request's hold (transient, with a NewID) ended by its request, before its
		// deadline, is nobody's to read once ended (see Hold.NewID): its entries are its
		// record. One ended past its deadline (by the reconciler) keeps it, so that its
		// request's own end then answers ErrHoldEnded.
		op.writes = append(op.writes, bookWrite{key: holdKey(holdID), val: rec.encode()})
	}
	op.balance, op.hasBalance = a.recorded(), true
	h.rec = rec
	delete(a.holds, holdID)
	err = b.writeHoldChange(a, h, &op)
	if err == nil && rec.Hold.Bound {
		// Lost in a crash, the end of a bound hold would leave it open for good: the task
		// that carries it has finished, and the reconciler leaves bound holds alone.
		err = b.syncCommitted()
	}
	return e, err
}

// endedError is what ending or binding the ended hold h answers: ErrHoldReconciled when the
// reconciler released it, else ErrHoldEnded.
func endedError(h Hold) error {
	if h.Reconciled {
		return ErrHoldReconciled
	}
	return ErrHoldEnded
}

func (b *Badger) BindHold(ctx context.Context, holdID, taskID string) error {
	a, h, err := b.lockHold(holdID)
	if err != nil {
		return err
	}
	rec := h.rec
	switch {
	case rec.Hold.State != HoldOpen:
		err = endedError(rec.Hold)
	case rec.Hold.Bound && rec.Hold.Ref == taskID:
		// Bound already (the task's create binds it): nothing to write.
	case rec.Hold.Bound:
		err = ErrConflict
	}
	if err != nil || rec.Hold.Bound {
		batch := h.batch
		a.mu.Unlock()
		if err == nil && batch != nil {
			err = b.waitBatch(batch)
		}
		if err == nil {
			b.ledger.forgetBound(h, taskID)
		}
		return err
	}
	before := h.rec
	op, err := b.bindOp(a, h, taskID, 0)
	if err != nil {
		a.mu.Unlock()
		return err
	}
	if err := b.writeHoldChange(a, h, &op); err != nil {
		if before.Hold.Transient {
			b.holdAgain(before) // only memory had it: the book read again has not
		}
		return err
	}
	if err := b.syncCommitted(); err != nil {
		return err
	}
	b.ledger.forgetBound(h, taskID)
	return nil
}

// bindOp binds h, an open and unbound hold of the account a (locked), to the task taskID in
// memory, and returns the operation that writes it (with room for more writes: the task's
// record, when its create binds it): a transient hold is recorded now (its hold entry, its
// amount in Badger's budget counter), as a task's hold outlives the request that took it; a
// recorded one leaves the reconciler's list. With taskID "" it only records a transient hold,
// unbound, on the reconciler's list.
func (b *Badger) bindOp(a *bookAccount, h *bookHold, taskID string, room int) (ledgerOp, error) {
	rec := h.rec
	op := ledgerOp{acct: a, writes: make([]bookWrite, 0, 3+room)}
	if rec.Hold.Transient {
		if rec.Budget != "" {
			var err error
			op.counter = rec.Budget
			op.budget, op.bw, _, err = b.ledger.endBudget(b.db, rec.Budget, 0, rec.Hold.Amount, a.epoch.Load()) // a delta of 0 frees nothing
			if err != nil {
				return ledgerOp{}, err
			}
		}
		b.ledger.recordHold(&op, a, h)
		rec = h.rec
		rec.Hold.Transient = false
		op.balance, op.hasBalance = a.recorded(), true
		if taskID == "" {
			op.writes = append(op.writes, bookWrite{key: openHoldKey(rec.Hold), val: []byte{}})
		}
	} else if taskID != "" {
		op.writes = append(op.writes, bookWrite{key: openHoldKey(rec.Hold), del: true})
	}
	if taskID != "" {
		h.keepEntry() // with its Ref, before the task's id replaces it
		rec.Hold.Bound, rec.Hold.Ref = true, taskID
	}
	op.writes = append(op.writes, bookWrite{key: holdKey(rec.Hold.ID), val: rec.encode()})
	h.rec = rec
	return op, nil
}

// writeHoldChange adds op, a change of the hold h decided under its account's lock, to the
// batch, unlocks the account, and waits for the batch's commit.
func (b *Badger) writeHoldChange(a *bookAccount, h *bookHold, op *ledgerOp) error {
	batch, err := b.ledger.add(op)
	if err == nil {
		h.batch = batch
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	return b.waitBatch(batch)
}

// boundAtCreate notes in the book that CreateTask bound a hold of account to task in its own
// (committed) transaction; see bindTaskHold.
func (k *ledgerBook) boundAtCreate(holdID, account, task string) {
	h, ok := k.holds.Load(holdID)
	if !ok {
		return // not in memory: read from Badger, bound, when it is next used
	}
	h.acct.mu.Lock()
	defer h.acct.mu.Unlock()
	if h.current() && h.acct.name == account && h.rec.Hold.State == HoldOpen && !h.rec.Hold.Bound {
		h.keepEntry() // with its Ref, before the task's id replaces it
		h.rec.Hold.Bound, h.rec.Hold.Ref = true, task
	}
}

// Credit holds the account's lock until its batch is committed: a second credit with the same
// key, which reads Badger for the first, waits for it.
func (b *Badger) Credit(ctx context.Context, c Credit, now time.Time) (LedgerEntry, error) {
	if err := validCredit(c); err != nil {
		return LedgerEntry{}, err
	}
	a, err := b.ledger.lockAccount(b.db, c.Account)
	if err != nil {
		return LedgerEntry{}, err
	}
	e, batch, err := b.decideCredit(a, c, now)
	if err == nil && batch != nil {
		err = b.waitBatch(batch)
	}
	a.mu.Unlock()
	if err != nil || batch == nil {
		return e, err
	}
	return e, b.syncCommitted()
}

// decideCredit makes the credit c in the account a (locked), or answers the one made before
// with its key (and no batch).
func (b *Badger) decideCredit(a *bookAccount, c Credit, now time.Time) (LedgerEntry, *ledgerBatch, error) {
	once := prefixCreditKey + c.Account + "\x00" + c.IdempotencyKey
	var e LedgerEntry
	err := b.db.View(func(txn *badger.Txn) error { return txnGetJSON(txn, once, &e) })
	if err == nil || !errors.Is(err, ErrNotFound) {
		return e, nil, err // credited before (answer it), or unreadable
	}
	// Bound on the balance Badger records (without the open transient holds), as Balance answers,
	// and on what it becomes when every open hold is released (what is held comes back).
	rec := a.recorded()
	after := rec.Amount + c.Amount
	if after > MaxAmount-rec.Held || after < -MaxAmount {
		return LedgerEntry{}, nil, ErrBalanceBound
	}
	e = LedgerEntry{Time: now, Kind: EntryCredit, Amount: c.Amount, Note: c.Note}
	if c.Amount < 0 {
		e.Kind = EntryAdjust
	}
	// The record of the key holds the entry as record makes it; made first, so that a time
	// JSON cannot write changes nothing.
	e.ID, e.Account, e.BalanceAfter = strconv.FormatUint(a.bal.Entries+1, 10), a.name, after
	val, err := json.Marshal(e)
	if err != nil {
		return LedgerEntry{}, nil, err
	}
	a.bal.Limited = true
	op := ledgerOp{acct: a, writes: []bookWrite{{key: once, val: val}}}
	a.record(&op, &e)
	op.balance, op.hasBalance = a.recorded(), true
	batch, err := b.ledger.add(&op)
	return e, batch, err
}
