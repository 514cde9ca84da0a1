package storage

import (
	"context"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// RecountSlots sets the active-task slot counters (those named counterPrefix + key id) to what
// the task records hold: the records with Active set and Finished not set, per KeyID. It returns
// the counters it changed, with how much each was changed by.
//
// It is for the moment the store has just been opened, before any create runs: Badger serves
// one process, so no create is then in flight, and a slot that no record holds was taken by a
// create that a crash (kill -9) ended before its record was written, or kept by a task whose
// finish was written but not the slot's give-back. Called later, it would take back the slots of
// the creates in flight. A record that does not decode stops the recount, with nothing changed.
func (b *Badger) RecountSlots(ctx context.Context, counterPrefix string) (map[string]int64, error) {
	held := map[string]int64{}    // key id: the slots its records hold
	counters := map[string]bool{} // the slot counters on disk, and those the records need
	err := b.db.View(func(txn *badger.Txn) error {
		if err := countSlotsHeld(ctx, txn, held); err != nil {
			return err
		}
		prefix := []byte(prefixCounter + counterPrefix)
		ci := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
		defer ci.Close()
		for ci.Rewind(); ci.Valid(); ci.Next() {
			counters[string(ci.Item().Key()[len(prefixCounter):])] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for keyID := range held {
		counters[counterPrefix+keyID] = true
	}
	changed := map[string]int64{}
	for name := range counters {
		// Read through the cache, which has any value this process changed.
		cur, err := b.Counter(ctx, name)
		if err != nil {
			return changed, err
		}
		delta := held[name[len(counterPrefix):]] - cur
		if delta == 0 {
			continue
		}
		if _, _, err := b.AddCounter(ctx, name, delta, -1); err != nil {
			return changed, err
		}
		changed[name] = delta
	}
	return changed, nil
}

// countSlotsHeld adds to held, per key id, the task records that hold a slot: Active and not
// Finished.
func countSlotsHeld(ctx context.Context, txn *badger.Txn, held map[string]int64) error {
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: []byte(prefixTask)})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		item := it.Item()
		id := string(item.Key()[len(prefixTask):])
		err := item.Value(func(val []byte) error {
			t, err := decodeTaskRecord(id, val)
			if err != nil {
				return fmt.Errorf("recounting slots: task %q: %w", id, err)
			}
			if t.Active && !t.Finished && t.KeyID != "" {
				held[t.KeyID]++
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
