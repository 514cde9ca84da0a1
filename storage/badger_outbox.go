package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// dueKey is the due-time index entry of an event: keys sort by due time.
func dueKey(due int64, id string) []byte {
	return fmt.Appendf(nil, "%s%020d/%s", prefixEventDue, max(due, 0), id)
}

// NewClaimToken returns a random token for a lease or claim.
func NewClaimToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics where no randomness exists)
	return hex.EncodeToString(b)
}

func (b *Badger) EnqueueEvent(ctx context.Context, ev Event) (bool, error) {
	ev.Claim = ""
	stored := false
	err := b.update(ctx, func(txn *badger.Txn) error {
		stored = false
		if _, err := txn.Get([]byte(prefixEvent + ev.ID)); err == nil {
			return errNothingToWrite
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		if err := setJSON(txn, prefixEvent+ev.ID, ev, 0); err != nil {
			return err
		}
		stored = true
		return txn.Set(dueKey(ev.DueAt, ev.ID), nil)
	})
	return stored, err
}

func (b *Badger) ClaimDueEvents(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Event, error) {
	var claimed []Event
	t := now.UnixNano()
	until := now.Add(lease).UnixNano()
	err := b.update(ctx, func(txn *badger.Txn) error {
		claimed = claimed[:0]
		var due []string // event ids, earliest due first
		err := scanKeys(txn, prefixEventDue, func(k []byte) error {
			rest := string(k[len(prefixEventDue):])
			at, err := strconv.ParseInt(rest[:20], 10, 64)
			if err != nil || at > t || len(due) >= limit {
				return errStop
			}
			due = append(due, rest[21:])
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if len(due) == 0 {
			return errNothingToWrite
		}
		for _, id := range due {
			var ev Event
			if err := txnGetJSON(txn, prefixEvent+id, &ev); errors.Is(err, ErrNotFound) {
				continue // a stale index entry
			} else if err != nil {
				return err
			}
			if err := txn.Delete(dueKey(ev.DueAt, ev.ID)); err != nil {
				return err
			}
			ev.Claim, ev.DueAt = NewClaimToken(), until
			if err := setJSON(txn, prefixEvent+ev.ID, ev, 0); err != nil {
				return err
			}
			if err := txn.Set(dueKey(ev.DueAt, ev.ID), nil); err != nil {
				return err
			}
			claimed = append(claimed, ev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// claimed reads an event held by claim, or answers ErrLeaseLost.
func claimed(txn *badger.Txn, id, claim string) (Event, error) {
	var cur Event
	if err := txnGetJSON(txn, prefixEvent+id, &cur); errors.Is(err, ErrNotFound) {
		return cur, ErrLeaseLost
	} else if err != nil {
		return cur, err
	}
	if claim == "" || cur.Claim != claim {
		return cur, ErrLeaseLost
	}
	return cur, nil
}

func (b *Badger) AckEvent(ctx context.Context, id, claim string) error {
	return b.update(ctx, func(txn *badger.Txn) error {
		cur, err := claimed(txn, id, claim)
		if err != nil {
			return err
		}
		if err := txn.Delete(dueKey(cur.DueAt, id)); err != nil {
			return err
		}
		return txn.Delete([]byte(prefixEvent + id))
	})
}

func (b *Badger) RescheduleEvent(ctx context.Context, ev Event, claim string) error {
	return b.update(ctx, func(txn *badger.Txn) error {
		cur, err := claimed(txn, ev.ID, claim)
		if err != nil {
			return err
		}
		if err := txn.Delete(dueKey(cur.DueAt, ev.ID)); err != nil {
			return err
		}
		next := ev
		next.Claim = ""
		if err := setJSON(txn, prefixEvent+ev.ID, next, 0); err != nil {
			return err
		}
		return txn.Set(dueKey(next.DueAt, ev.ID), nil)
	})
}

func (b *Badger) NextEventDue(context.Context) (time.Time, bool, error) {
	var due time.Time
	found := false
	err := b.db.View(func(txn *badger.Txn) error {
		err := scanKeys(txn, prefixEventDue, func(k []byte) error {
			at, err := strconv.ParseInt(string(k[len(prefixEventDue):len(prefixEventDue)+20]), 10, 64)
			if err != nil {
				return err
			}
			due, found = time.Unix(0, at), true
			return errStop
		})
		if errors.Is(err, errStop) {
			return nil
		}
		return err
	})
	return due, found, err
}

func (b *Badger) PendingEvents(context.Context) (int, error) {
	n := 0
	err := b.db.View(func(txn *badger.Txn) error {
		return scanKeys(txn, prefixEvent, func([]byte) error { n++; return nil })
	})
	return n, err
}
