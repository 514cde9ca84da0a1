package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The ledger in Badger: every operation is one transaction over the account's balance record,
// the hold, the key's budget counter and the new entry. Transactions of one account are
// serialised by a lock (ledgerLocks) from before they start to their commit, so that concurrent
// holds against one balance queue instead of conflicting and starting over.
//
// A credit, a binding and the end of a hold bound to a task are synced to disk before they are
// acknowledged (sharing disk syncs). A hold, and the end of a hold that is not bound to a task,
// are lazy (commitLazy): acknowledged once written, synced within lazySyncDelay or by the next
// durable commit. A SIGKILL loses none of them; a machine crash may lose those of its last
// lazySyncDelay, which leaves a lost hold as released and a lost end's hold open for the
// reconciler, so that a charge may be lost, never made twice (docs/billing.md, "Crash
// semantics"). A task's create (CreateTask) binds its hold in its own durable transaction.

// balanceRecord is an account's balance and the number of its entries.
type balanceRecord struct {
	Amount  int64  `json:"amount"`
	Held    int64  `json:"held"`
	Limited bool   `json:"limited,omitempty"`
	Entries uint64 `json:"entries"`
}

// holdRecord is a hold, the number of its hold entry, and the budget counter it charged
// (badger_ledger_codec.go encodes it).
type holdRecord struct {
	Hold Hold `json:"hold"`
	// EntryN is the number of the hold's entry in its account's ledger.
	EntryN uint64 `json:"-"`
	// Entry is read from records of earlier versions only, which kept the whole entry.
	Entry  LedgerEntry `json:"entry"`
	Budget string      `json:"budget_counter,omitempty"`
}

func balanceKey(account string) string { return prefixBalance + account }
func holdKey(id string) string         { return prefixHold + id }
func entryKey(account string, n uint64) string {
	k := make([]byte, 0, len(prefixEntry)+len(account)+21)
	k = append(append(append(k, prefixEntry...), account...), 0)
	return string(appendDigits20(k, n))
}
func openHoldKey(h Hold) string {
	k := make([]byte, 0, len(prefixOpenHold)+21+len(h.ID))
	k = appendDigits20(append(k, prefixOpenHold...), uint64(max(h.Deadline.UnixMicro(), 0)))
	return string(append(append(k, '/'), h.ID...))
}

// appendDigits20 appends n in decimal, zero-padded to 20 digits (fmt's %020d, without fmt: these
// keys are made twice per ledger write).
func appendDigits20(b []byte, n uint64) []byte {
	var d [20]byte
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[:]...)
}

func txnBalance(txn *badger.Txn, account string) (balanceRecord, error) {
	var rec balanceRecord
	err := txnGetRecord(txn, balanceKey(account), rec.decode)
	if errors.Is(err, ErrNotFound) {
		return balanceRecord{}, nil
	}
	return rec, err
}

// appendEntry adds e to the account's ledger with the change of bal it records, and stores
// bal; it fills in e's ID, Account and BalanceAfter.
func appendEntry(txn *badger.Txn, account string, bal *balanceRecord, e *LedgerEntry) error {
	bal.Amount += e.Amount
	bal.Entries++
	e.ID = strconv.FormatUint(bal.Entries, 10)
	e.Account = account
	e.BalanceAfter = bal.Amount
	if err := setEntry(txn, entryKey(account, bal.Entries), encodeEntry(*e, bal.Entries), 0); err != nil {
		return err
	}
	return setEntry(txn, balanceKey(account), bal.encode(), 0)
}

// addBudget adds delta to a key's budget counter; a counter that is gone (its period long over)
// is left alone unless create is set.
func addBudget(txn *badger.Txn, counter string, delta int64, create bool, ttl time.Duration) error {
	spent, found, err := txnInt64(txn, counter)
	if err != nil || !found && !create {
		return err
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(spent+delta))
	return txn.SetEntry(entry(counter, buf[:], ttl))
}

// txnInt64 reads an int64 (8 bytes, big endian) stored under key; a missing one is 0.
func txnInt64(txn *badger.Txn, key string) (v int64, found bool, err error) {
	raw, err := txnGet(txn, key)
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if len(raw) != 8 {
		return 0, false, fmt.Errorf("%s is corrupt", key)
	}
	return int64(binary.BigEndian.Uint64(raw)), true, nil
}

func (b *Badger) Hold(ctx context.Context, h Hold, now time.Time) (Hold, LedgerEntry, error) {
	if err := validHold(h); err != nil {
		return Hold{}, LedgerEntry{}, err
	}
	var rec holdRecord
	var entry LedgerEntry
	err := b.commitLazy(ctx, func(txn *badger.Txn) error {
		err := txnHold(txn, h.ID, &rec)
		if err == nil {
			// Taken before: answer it, and its entry.
			if err := txnGetRecord(txn, entryKey(rec.Hold.Account, rec.EntryN), func(val []byte) error {
				return decodeEntry(val, &entry)
			}); err != nil {
				return err
			}
			return errNothingToWrite
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		bal, err := txnBalance(txn, h.Account)
		if err != nil {
			return err
		}
		if bal.Limited && bal.Amount < h.Amount {
			return ErrInsufficient
		}
		rec = holdRecord{Hold: h}
		rec.Hold.State, rec.Hold.Created = HoldOpen, now
		if h.Budget.Limit > 0 {
			period, end := budgetPeriod(h.Budget.Period, now)
			rec.Budget = prefixBudget + h.KeyID + "\x00" + period
			spent, _, err := txnInt64(txn, rec.Budget)
			if err != nil {
				return err
			}
			if spent+h.Amount > h.Budget.Limit {
				return ErrBudgetExceeded
			}
			var ttl time.Duration
			if !end.IsZero() {
				ttl = end.Sub(now) + budgetKeep
			}
			if err := addBudget(txn, rec.Budget, h.Amount, true, ttl); err != nil {
				return err
			}
		}
		bal.Held += h.Amount
		entry = LedgerEntry{Time: now, KeyID: h.KeyID, Model: h.Model, Ref: h.Ref, HoldID: h.ID, Kind: EntryHold, Amount: -h.Amount}
		if err := appendEntry(txn, h.Account, &bal, &entry); err != nil {
			return err
		}
		if !h.Bound {
			if err := txn.Set([]byte(openHoldKey(rec.Hold)), nil); err != nil {
				return err
			}
		}
		rec.EntryN = bal.Entries
		return setEntry(txn, holdKey(h.ID), rec.encode(), 0)
	}, b.ledger.of(h.Account))
	if err != nil {
		return Hold{}, LedgerEntry{}, err
	}
	b.ledger.remember(rec.Hold.ID, rec.Hold.Account)
	return rec.Hold, entry, nil
}

func (b *Badger) Settle(ctx context.Context, holdID string, amount int64, now time.Time) (LedgerEntry, error) {
	if err := validCharge(amount); err != nil {
		return LedgerEntry{}, err
	}
	return b.endHold(ctx, holdID, amount, EntrySettle, "", now)
}

func (b *Badger) Release(ctx context.Context, holdID, reason string, now time.Time) (LedgerEntry, error) {
	return b.endHold(ctx, holdID, 0, EntryRelease, reason, now)
}

// endHold settles (charging charged) or releases an open hold.
func (b *Badger) endHold(ctx context.Context, holdID string, charged int64, kind, note string, now time.Time) (LedgerEntry, error) {
	account, err := b.holdAccount(ctx, holdID) // for its lock
	if err != nil {
		return LedgerEntry{}, err
	}
	var e LedgerEntry
	bound := false
	err = b.commitSerial(ctx, func(txn *badger.Txn) error {
		var rec holdRecord
		if err := txnHold(txn, holdID, &rec); err != nil {
			return err
		}
		if rec.Hold.State != HoldOpen {
			return ErrHoldEnded
		}
		bal, err := txnBalance(txn, rec.Hold.Account)
		if err != nil {
			return err
		}
		held := rec.Hold.Amount
		bound = rec.Hold.Bound
		if rec.Budget != "" {
			if err := addBudget(txn, rec.Budget, charged-held, false, budgetCounterTTL(txn, rec.Budget)); err != nil {
				return err
			}
		}
		bal.Held -= held
		e = LedgerEntry{Time: now, KeyID: rec.Hold.KeyID, Model: rec.Hold.Model, Ref: rec.Hold.Ref, HoldID: holdID, Kind: kind, Amount: held - charged, Note: note}
		if kind == EntrySettle {
			e.Charged = charged
			if charged > held {
				e.Note = overNote(held, charged)
			}
			rec.Hold.State = HoldSettled
		} else {
			rec.Hold.State = HoldReleased
		}
		if err := appendEntry(txn, rec.Hold.Account, &bal, &e); err != nil {
			return err
		}
		if !rec.Hold.Bound {
			if err := txn.Delete([]byte(openHoldKey(rec.Hold))); err != nil {
				return err
			}
		}
		return setEntry(txn, holdKey(holdID), rec.encode(), 0)
	}, false, b.ledger.of(account))
	switch {
	case err == nil && bound:
		// Lost in a crash, the end of a bound hold would leave it open for good: the task
		// that carries it has finished, and the reconciler leaves bound holds alone.
		err = b.syncCommitted()
	case err == nil:
		b.syncSoon() // lazy, as commitLazy
	}
	if err == nil || errors.Is(err, ErrHoldEnded) {
		b.ledger.forget(holdID)
	}
	return e, err
}

// budgetCounterTTL is the time the budget counter has left, so that a change keeps it.
func budgetCounterTTL(txn *badger.Txn, counter string) time.Duration {
	item, err := txn.Get([]byte(counter))
	if err != nil || item.ExpiresAt() == 0 {
		return 0 // gone (addBudget leaves it alone) or never expiring
	}
	return time.Until(time.Unix(int64(item.ExpiresAt()), 0)) + time.Second
}

func (b *Badger) BindHold(ctx context.Context, holdID, taskID string) error {
	// The task's create bound it already (CreateTask binds the task's HoldID), and it is
	// still open: nothing to read or write.
	if b.ledger.boundTo(holdID, taskID) {
		return nil
	}
	account, err := b.holdAccount(ctx, holdID) // for its lock
	if err != nil {
		return err
	}
	return b.commitSerial(ctx, func(txn *badger.Txn) error {
		var rec holdRecord
		if err := txnHold(txn, holdID, &rec); err != nil {
			return err
		}
		switch {
		case rec.Hold.State != HoldOpen:
			return ErrHoldEnded
		case rec.Hold.Bound && rec.Hold.Ref == taskID:
			return errNothingToWrite
		case rec.Hold.Bound:
			return ErrConflict
		}
		return bindHold(txn, rec, taskID)
	}, true, b.ledger.of(account))
}

// bindHold writes rec, an open and unbound hold, as bound to taskID.
func bindHold(txn *badger.Txn, rec holdRecord, taskID string) error {
	if err := txn.Delete([]byte(openHoldKey(rec.Hold))); err != nil {
		return err
	}
	rec.Hold.Bound, rec.Hold.Ref = true, taskID
	return setEntry(txn, holdKey(rec.Hold.ID), rec.encode(), 0)
}

// bindTaskHold binds the hold of a task being created (Task.HoldID) to it, in the create's
// transaction, so that one durable commit records the task and takes its hold off the
// reconciler's list; it returns the hold's account when it bound it. A hold that is unknown,
// ended, bound already or another account's than the task's is left alone (BindHold then tells
// the caller what it found).
func bindTaskHold(txn *badger.Txn, holdID, taskID, taskAccount string) (account string, err error) {
	var rec holdRecord
	err = txnHold(txn, holdID, &rec)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil || rec.Hold.State != HoldOpen || rec.Hold.Bound || rec.Hold.Account != taskAccount {
		return "", err
	}
	return rec.Hold.Account, bindHold(txn, rec, taskID)
}

func (b *Badger) HoldByID(ctx context.Context, holdID string) (Hold, error) {
	var rec holdRecord
	if err := b.db.View(func(txn *badger.Txn) error { return txnHold(txn, holdID, &rec) }); err != nil {
		return Hold{}, err
	}
	return rec.Hold, nil
}

func (b *Badger) Credit(ctx context.Context, c Credit, now time.Time) (LedgerEntry, error) {
	if err := validCredit(c); err != nil {
		return LedgerEntry{}, err
	}
	once := prefixCreditKey + c.Account + "\x00" + c.IdempotencyKey
	var e LedgerEntry
	err := b.commitSerial(ctx, func(txn *badger.Txn) error {
		err := txnGetJSON(txn, once, &e)
		if err == nil {
			return errNothingToWrite // credited before: answer it
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		bal, err := txnBalance(txn, c.Account)
		if err != nil {
			return err
		}
		if after := bal.Amount + c.Amount; after > MaxAmount || after < -MaxAmount {
			return ErrBalanceBound
		}
		bal.Limited = true
		e = LedgerEntry{Time: now, Kind: EntryCredit, Amount: c.Amount, Note: c.Note}
		if c.Amount < 0 {
			e.Kind = EntryAdjust
		}
		if err := appendEntry(txn, c.Account, &bal, &e); err != nil {
			return err
		}
		return setJSON(txn, once, e, 0)
	}, true, b.ledger.of(c.Account))
	return e, err
}

func (b *Badger) Balance(ctx context.Context, account string) (Balance, error) {
	var rec balanceRecord
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		rec, err = txnBalance(txn, account)
		return err
	})
	return Balance{Account: account, Amount: rec.Amount, Held: rec.Held, Limited: rec.Limited}, err
}

func (b *Badger) LedgerPage(ctx context.Context, account, after string, limit int) ([]LedgerEntry, string, error) {
	var from uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil {
			return nil, "", fmt.Errorf("ledger: bad cursor %q", after)
		}
		from = n
	}
	return b.ledgerPage(account, []byte(entryKey(account, from+1)), false, limit)
}

// ledgerPage reads at most limit entries of the account from seek on, forward or in reverse,
// and the cursor of the next page ("" when none is left).
func (b *Badger) ledgerPage(account string, seek []byte, reverse bool, limit int) ([]LedgerEntry, string, error) {
	limit = clampPage(limit)
	var entries []LedgerEntry
	more := false
	err := b.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte(prefixEntry + account + "\x00")
		opts.Reverse = reverse
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(seek); it.ValidForPrefix(opts.Prefix); it.Next() {
			if len(entries) == limit {
				more = true
				return nil
			}
			var e LedgerEntry
			if err := it.Item().Value(func(val []byte) error { return decodeEntry(val, &e) }); err != nil {
				return err
			}
			entries = append(entries, e)
		}
		return nil
	})
	if err != nil || !more {
		return entries, "", err
	}
	return entries, entries[len(entries)-1].ID, nil
}

func (b *Badger) OverdueHolds(ctx context.Context, now time.Time, limit int) ([]Hold, error) {
	if limit <= 0 {
		return nil, nil
	}
	var holds []Hold
	due := fmt.Sprintf("%s%020d/", prefixOpenHold, max(now.UnixMicro(), 0))
	err := b.db.View(func(txn *badger.Txn) error {
		return scanKeys(txn, prefixOpenHold, func(key []byte) error {
			if string(key) >= due || len(holds) == limit {
				return errStop
			}
			id := string(key[len(prefixOpenHold)+21:])
			var rec holdRecord
			if err := txnHold(txn, id, &rec); err != nil {
				return err
			}
			holds = append(holds, rec.Hold)
			return nil
		})
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return holds, err
}

func (b *Badger) LedgerPageNewest(ctx context.Context, account, before string, limit int) ([]LedgerEntry, string, error) {
	seek := append([]byte(prefixEntry+account+"\x00"), 0xff)
	if before != "" {
		n, err := strconv.ParseUint(before, 10, 64)
		if err != nil || n == 0 {
			return nil, "", fmt.Errorf("ledger: bad cursor %q", before)
		}
		seek = []byte(entryKey(account, n-1))
	}
	return b.ledgerPage(account, seek, true, limit)
}
