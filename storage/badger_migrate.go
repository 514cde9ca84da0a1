package storage

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// legacyRecord is the prefix of the raw records of earlier versions, whose callers owned the key
// namespaces (r/config/…, r/outbox/…, r/relay/…, r/idem/…, r/finished/…).
const legacyRecord = "r/"

// migrateLegacy moves what earlier versions kept as raw records into the domain records: the
// generated webhook secret (so that account signing secrets stay the same), pending callback
// events (with their due time indexed) and relay tokens. In-flight idempotency claims and
// finished markers are dropped: the first expire within minutes, and task records carry Finished.
// It runs once, when a store is opened, and removes each record it has moved.
func migrateLegacy(db *badger.DB) error {
	type move struct {
		key, val  []byte
		expiresAt uint64
	}
	var moves []move
	err := db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte(legacyRecord)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			val, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			moves = append(moves, move{it.Item().KeyCopy(nil), val, it.Item().ExpiresAt()})
		}
		return nil
	})
	if err != nil || len(moves) == 0 {
		return err
	}
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	for _, m := range moves {
		name := strings.TrimPrefix(string(m.key), legacyRecord)
		switch {
		case name == "config/webhook-secret":
			if err := wb.Set([]byte(prefixSetting+"webhook-secret"), m.val); err != nil {
				return err
			}
		case strings.HasPrefix(name, "outbox/"):
			var old struct {
				Event
				NextAt int64 `json:"next_at"`
			}
			if json.Unmarshal(m.val, &old) != nil || old.ID == "" {
				break
			}
			ev := old.Event
			ev.DueAt, ev.Claim = old.NextAt, ""
			val, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			if err := wb.Set([]byte(prefixEvent+ev.ID), val); err != nil {
				return err
			}
			if err := wb.Set(dueKey(ev.DueAt, ev.ID), nil); err != nil {
				return err
			}
		case strings.HasPrefix(name, "relay/"):
			e := badger.NewEntry([]byte(prefixRelay+strings.TrimPrefix(name, "relay/")), m.val)
			e.ExpiresAt = m.expiresAt
			if err := wb.SetEntry(e); err != nil {
				return err
			}
		}
		if err := wb.Delete(m.key); err != nil {
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	return db.Sync()
}

// buildIndex builds an index that a store written by an earlier version lacks, once: unless the
// setting marks it built, collect reads the store and adds each entry (empty, expiring at
// expiresAt, Unix seconds, 0 for never); the entries and the setting are written in batches,
// so an index of any size fits, and synced.
func buildIndex(db *badger.DB, setting string, collect func(txn *badger.Txn, add func(key []byte, expiresAt uint64)) error) error {
	var entries []*badger.Entry
	err := db.View(func(txn *badger.Txn) error {
		if _, err := txnGet(txn, setting); err == nil {
			return errStop
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		return collect(txn, func(key []byte, expiresAt uint64) {
			entries = append(entries, &badger.Entry{Key: key, ExpiresAt: expiresAt})
		})
	})
	if errors.Is(err, errStop) {
		return nil
	}
	if err != nil {
		return err
	}
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	for _, e := range append(entries, badger.NewEntry([]byte(setting), []byte("1"))) {
		if err := wb.SetEntry(e); err != nil {
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	return db.Sync()
}
