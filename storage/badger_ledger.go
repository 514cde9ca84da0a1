package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The ledger in Badger: its records (balances, holds with their open-hold markers, entries,
// budget counters, credit keys) and the reads of them. Every change is decided in memory by
// the book of accounts (badger_book.go) and written by the ledger's group commit
// (badger_book_batch.go); the operations are in badger_ledger_ops.go. Reads (Balance, HoldByID,
// LedgerPage, OverdueHolds) read Badger, which has every acknowledged change: each answer is
// of one committed state, in which the balance is the sum of the entries.

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
	Budget string `json:"budget_counter,omitempty"`
}

// jsonHoldRecord is a hold's record as the earliest versions wrote it: in JSON, with its whole
// hold entry, whose ID is the entry's number (read only; see holdRecord.decode).
type jsonHoldRecord struct {
	Hold  Hold `json:"hold"`
	Entry struct {
		ID string `json:"id"`
	} `json:"entry"`
	Budget string `json:"budget_counter,omitempty"`
}

func balanceKey(account string) string { return prefixBalance + account }
func holdKey(id string) string         { return prefixHold + id }
func entryKey(account string, n uint64) string {
	return string(appendEntryKey(make([]byte, 0, entryKeySize(account)), account, n))
}

// appendEntryKey appends entryKey(account, n), of entryKeySize(account) bytes.
func appendEntryKey(k []byte, account string, n uint64) []byte {
	return appendDigits20(append(append(append(k, prefixEntry...), account...), 0), n)
}

func entryKeySize(account string) int { return len(prefixEntry) + len(account) + 21 }
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

// bindTaskHold binds the hold of a task being created (Task.HoldID) to it, in the create's
// transaction, so that one durable commit records the task and takes its hold off the
// reconciler's list; it returns the hold's account when it bound it. A hold that is unknown,
// ended, bound already or another account's than the task's is left alone (BindHold then tells
// the caller what it found).
//
// It reads the hold from Badger, not from the book: the Hold that took it was committed before
// its caller created the task. An end of the hold that the book decided and has not committed
// yet is not seen; its commit then either comes first (the create's transaction conflicts and
// reads it again) or after (the end's record, written from the book's, stands). Once the create
// is committed, CreateTask tells the book (ledgerBook.boundAtCreate); an end decided between the
// two writes the hold's record as the book had it (unbound), and is lazy where a bound hold's
// end would wait for its disk sync.
func bindTaskHold(txn *badger.Txn, holdID, taskID, taskAccount string) (account string, err error) {
	var rec holdRecord
	err = txnHold(txn, holdID, &rec)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil || !bindableTo(rec.Hold, taskAccount) {
		return "", err
	}
	if err := txn.Delete([]byte(openHoldKey(rec.Hold))); err != nil {
		return "", err
	}
	rec.Hold.Bound, rec.Hold.Ref = true, taskID
	return rec.Hold.Account, setEntry(txn, holdKey(rec.Hold.ID), rec.encode(), 0)
}

// bindableTo reports whether a task of account may bind h: h is open, unbound and account's.
func bindableTo(h Hold, account string) bool {
	return h.State == HoldOpen && !h.Bound && h.Account == account
}

// unbindTaskHold undoes bindTaskHold for a create taken back (takeBackCreate): an open hold
// bound to taskID is unbound again, on the reconciler's list at its deadline. Any other hold is
// left alone.
func unbindTaskHold(txn *badger.Txn, holdID, taskID string) error {
	var rec holdRecord
	err := txnHold(txn, holdID, &rec)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil || rec.Hold.State != HoldOpen || !rec.Hold.Bound || rec.Hold.Ref != taskID {
		return err
	}
	rec.Hold.Bound = false
	if err := txn.Set([]byte(openHoldKey(rec.Hold)), nil); err != nil {
		return err
	}
	return setEntry(txn, holdKey(holdID), rec.encode(), 0)
}

func (b *Badger) HoldByID(ctx context.Context, holdID string) (Hold, error) {
	if h, ok := b.ledger.transientHold(holdID); ok {
		return h, nil
	}
	var rec holdRecord
	if err := b.db.View(func(txn *badger.Txn) error { return txnHold(txn, holdID, &rec) }); err != nil {
		return Hold{}, err
	}
	return rec.Hold, nil
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
	if err != nil {
		return nil, err
	}
	return b.ledger.overdueTransient(holds, now, limit), nil
}
