package storage

import (
	"encoding/json"
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
