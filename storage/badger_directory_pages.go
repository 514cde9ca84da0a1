package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/dgraph-io/badger/v4"
)

// The directory's indexes, kept by every key and account write (and built once, when a store
// written by an earlier version is opened):
const (
	prefixKeyOfAccount = "kn/" // kn/<account>\x00<key id> -> empty: the keys of an account
	prefixAccountName  = "an/" // an/<name> -> empty: every account with a record or a key
	// settingDirectoryIndex marks a store whose directory indexes are built.
	settingDirectoryIndex = prefixSetting + "directory-index"
)

func keyOfAccountKey(account, id string) []byte {
	return []byte(prefixKeyOfAccount + account + "\x00" + id)
}

// indexKey writes the index entries of a key (its account's entry and the account's name).
func indexKey(txn *badger.Txn, k APIKey) error {
	if err := txn.Set(keyOfAccountKey(k.Account, k.ID), nil); err != nil {
		return err
	}
	return txn.Set([]byte(prefixAccountName+k.Account), nil)
}

// pageEntries reads up to q.Limit entries under prefix from q's cursor, calling fn with each
// entry's key without the prefix, in ascending order, and reports whether more entries follow
// in the direction read. An entry whose record is gone (fn skips it) leaves the page short.
func pageEntries(txn *badger.Txn, prefix []byte, q DirectoryPage, fn func(name []byte) error) (bool, error) {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = prefix
	opts.Reverse = q.Before != ""
	it := txn.NewIterator(opts)
	defer it.Close()
	seek, skip := append(bytes.Clone(prefix), q.After...), []byte(q.After)
	if opts.Reverse {
		seek, skip = append(bytes.Clone(prefix), q.Before...), []byte(q.Before)
	}
	var names [][]byte
	for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
		name := it.Item().Key()[len(prefix):]
		if (q.After != "" || opts.Reverse) && bytes.Equal(name, skip) {
			continue
		}
		if len(names) == q.Limit {
			break
		}
		names = append(names, bytes.Clone(name))
	}
	more := it.ValidForPrefix(prefix)
	if opts.Reverse {
		for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
			names[i], names[j] = names[j], names[i]
		}
	}
	for _, name := range names {
		if err := fn(name); err != nil {
			return false, err
		}
	}
	return more, nil
}

func (b *Badger) KeysPage(_ context.Context, q DirectoryPage) ([]APIKey, bool, error) {
	q.normal()
	prefix := []byte(prefixKeyID)
	if q.Account != "" {
		prefix = []byte(prefixKeyOfAccount + q.Account + "\x00")
	}
	keys := []APIKey{}
	var more bool
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		more, err = pageEntries(txn, prefix, q, func(id []byte) error {
			hash, err := txnGet(txn, prefixKeyID+string(id))
			if errors.Is(err, ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			var k APIKey
			if err := txnGetJSON(txn, prefixKey+string(hash), &k); errors.Is(err, ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			if q.Account != "" && k.Account != q.Account {
				return nil // an entry left by a move that the record has not followed
			}
			keys = append(keys, k)
			return nil
		})
		return err
	})
	return keys, more, err
}

func (b *Badger) AccountsPage(_ context.Context, q DirectoryPage) ([]Account, bool, error) {
	q.normal()
	accts := []Account{}
	var more bool
	err := b.db.View(func(txn *badger.Txn) error {
		var err error
		more, err = pageEntries(txn, []byte(prefixAccountName), q, func(name []byte) error {
			a := Account{Name: string(name)}
			if err := txnGetJSON(txn, prefixAccount+string(name), &a); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			accts = append(accts, a)
			return nil
		})
		return err
	})
	return accts, more, err
}

// indexDirectory builds the directory's indexes of a store that an earlier version wrote: once,
// when the store is opened, marked done by a setting.
func indexDirectory(db *badger.DB) error {
	return buildIndex(db, settingDirectoryIndex, func(txn *badger.Txn, add func(key []byte, expiresAt uint64)) error {
		err := scan(txn, prefixKey, func(_, val []byte) error {
			var k APIKey
			if err := json.Unmarshal(val, &k); err != nil {
				return err
			}
			add(keyOfAccountKey(k.Account, k.ID), 0)
			add([]byte(prefixAccountName+k.Account), 0)
			return nil
		})
		if err != nil {
			return err
		}
		return scanKeys(txn, prefixAccount, func(key []byte) error {
			add([]byte(prefixAccountName+string(key[len(prefixAccount):])), 0)
			return nil
		})
	})
}
