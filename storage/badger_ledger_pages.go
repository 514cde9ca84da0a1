package storage

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

// The reading of an account's entries, which Badger keeps in blocks of consecutive entries
// keyed by the number of their last one (badger_ledger_block.go): a page may start or end in
// the middle of a block.

func (b *Badger) LedgerPage(ctx context.Context, account, after string, limit int) ([]LedgerEntry, string, error) {
	var from uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil || n == math.MaxUint64 {
			return nil, "", fmt.Errorf("ledger: bad cursor %q", after)
		}
		from = n
	}
	return b.ledgerPage(account, from+1, false, limit)
}

func (b *Badger) LedgerPageNewest(ctx context.Context, account, before string, limit int) ([]LedgerEntry, string, error) {
	to := uint64(math.MaxUint64)
	if before != "" {
		n, err := strconv.ParseUint(before, 10, 64)
		if err != nil || n == 0 {
			return nil, "", fmt.Errorf("ledger: bad cursor %q", before)
		}
		to = n - 1
	}
	return b.ledgerPage(account, to, true, limit)
}

// ledgerPage reads at most limit entries of the account from entry n on (forward), or from n
// down (reverse), and the cursor of the next page ("" when none is left).
func (b *Badger) ledgerPage(account string, n uint64, reverse bool, limit int) ([]LedgerEntry, string, error) {
	limit = clampPage(limit)
	var entries []LedgerEntry
	more := false
	// take keeps an entry, or notes that the page is full with one more to come.
	take := func(e LedgerEntry) bool {
		if len(entries) == limit {
			more = true
			return false
		}
		entries = append(entries, e)
		return true
	}
	err := b.db.View(func(txn *badger.Txn) error {
		if reverse {
			return reverseEntries(txn, account, n, take)
		}
		return forwardEntries(txn, account, n, take)
	})
	if err != nil || !more {
		return entries, "", err
	}
	return entries, entries[len(entries)-1].ID, nil
}

// entryIterator iterates over the account's ledger values.
func entryIterator(txn *badger.Txn, account string, reverse bool) (*badger.Iterator, []byte) {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false // a page reads a few values; Value reads each
	opts.Prefix = []byte(prefixEntry + account + "\x00")
	opts.Reverse = reverse
	return txn.NewIterator(opts), opts.Prefix
}

// entryKeyNumber is the entry number a ledger key ends with.
func entryKeyNumber(key []byte) (uint64, error) {
	if len(key) < 20 {
		return 0, errCorruptLedgerRecord
	}
	n, err := strconv.ParseUint(string(key[len(key)-20:]), 10, 64)
	if err != nil {
		return 0, errCorruptLedgerRecord
	}
	return n, nil
}

// forwardEntries calls take for the account's entries from n on, in order, until it answers
// false: the first value at or after entry n's key is the one holding n.
func forwardEntries(txn *badger.Txn, account string, n uint64, take func(LedgerEntry) bool) error {
	it, prefix := entryIterator(txn, account, false)
	defer it.Close()
	more := true
	for it.Seek([]byte(entryKey(account, n))); more && it.ValidForPrefix(prefix); it.Next() {
		keyN, err := entryKeyNumber(it.Item().Key())
		if err != nil {
			return err
		}
		err = it.Item().Value(func(val []byte) error {
			return decodeLedgerValue(account, keyN, val, n, math.MaxUint64, func(e LedgerEntry) bool {
				more = take(e)
				return more
			})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// reverseEntries calls take for the account's entries from n down, newest first, until it
// answers false. The value holding n may be keyed above n (a block ending after it): the
// reverse walk starts at the first key at or after n's.
func reverseEntries(txn *badger.Txn, account string, n uint64, take func(LedgerEntry) bool) error {
	start, err := blockKeyHolding(txn, account, n)
	if err != nil {
		return err
	}
	it, prefix := entryIterator(txn, account, true)
	defer it.Close()
	more := true
	var block []LedgerEntry
	for it.Seek(start); more && it.ValidForPrefix(prefix); it.Next() {
		keyN, err := entryKeyNumber(it.Item().Key())
		if err != nil {
			return err
		}
		block = block[:0]
		err = it.Item().Value(func(val []byte) error {
			return decodeLedgerValue(account, keyN, val, 0, n, func(e LedgerEntry) bool {
				block = append(block, e)
				return true
			})
		})
		if err != nil {
			return err
		}
		for i := len(block) - 1; i >= 0 && more; i-- {
			more = take(block[i])
		}
	}
	return nil
}

// blockKeyHolding is the key of the value that holds entry n of the account, or the key after
// every entry of it when there is none at or after n (a reverse seek from there starts at the
// newest).
func blockKeyHolding(txn *badger.Txn, account string, n uint64) ([]byte, error) {
	it, prefix := entryIterator(txn, account, false)
	defer it.Close()
	it.Seek([]byte(entryKey(account, n)))
	if !it.ValidForPrefix(prefix) {
		return append(prefix, 0xff), nil
	}
	return it.Item().KeyCopy(nil), nil
}

// txnEntry reads entry n of the account; ErrNotFound when it has none.
func txnEntry(txn *badger.Txn, account string, n uint64, e *LedgerEntry) error {
	found := false
	err := forwardEntries(txn, account, n, func(got LedgerEntry) bool {
		found = got.ID == strconv.FormatUint(n, 10)
		*e = got
		return false
	})
	if err == nil && !found {
		err = ErrNotFound
	}
	return err
}
