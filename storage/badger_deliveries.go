package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// prefixDelivery holds callback delivery records: cd/<task id>\x00<at, 20 digits>/<event id>
// /<attempt> -> Delivery.
const prefixDelivery = "cd/"

func (b *Badger) RecordDelivery(ctx context.Context, d Delivery, ttl time.Duration) error {
	val, err := json.Marshal(d)
	if err != nil {
		return err
	}
	prefix := prefixDelivery + d.TaskID + "\x00"
	key := fmt.Sprintf("%s%020d/%s/%d", prefix, max(d.At, 0), d.EventID, d.Attempt)
	return b.updateVolatile(ctx, func(txn *badger.Txn) error {
		if err := setEntry(txn, key, val, max(ttl, minTaskRecordTTL)); err != nil {
			return err
		}
		// Newest first: keep MaxDeliveries (the one just written included), drop the rest.
		for _, k := range deliveryKeysPast(txn, prefix, MaxDeliveries) {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// deliveryKeysPast returns the delivery keys under prefix past the newest keep.
func deliveryKeysPast(txn *badger.Txn, prefix string, keep int) [][]byte {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = []byte(prefix)
	opts.Reverse = true
	it := txn.NewIterator(opts)
	defer it.Close()
	var past [][]byte
	n := 0
	for it.Seek(append([]byte(prefix), 0xff)); it.ValidForPrefix([]byte(prefix)); it.Next() {
		if n >= keep {
			past = append(past, it.Item().KeyCopy(nil))
		}
		n++
	}
	return past
}

func (b *Badger) TaskDeliveries(_ context.Context, taskID string) ([]Delivery, error) {
	var list []Delivery
	prefix := []byte(prefixDelivery + taskID + "\x00")
	err := b.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix) && len(list) < MaxDeliveries; it.Next() {
			var d Delivery
			if err := it.Item().Value(func(val []byte) error { return json.Unmarshal(val, &d) }); err != nil {
				return err
			}
			list = append(list, d)
		}
		return nil
	})
	return list, err
}
