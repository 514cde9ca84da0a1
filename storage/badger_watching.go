package storage

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// prefixWatcher: w/<group>/<member> -> until when the member is alive (Unix nanoseconds).
const prefixWatcher = "w/"

func (b *Badger) UnfinishedTaskIDs(ctx context.Context, shards int, want func(shard int) bool, fn func(id string) bool) error {
	return b.UnfinishedTasks(ctx, func(id string) bool {
		return !want(TaskShard(id, shards)) || fn(id)
	})
}

func (b *Badger) ReadTasks(_ context.Context, ids []string) ([]Task, error) {
	tasks := make([]Task, 0, len(ids))
	err := b.db.View(func(txn *badger.Txn) error {
		for _, id := range ids {
			t, err := txnGetTask(txn, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			tasks = append(tasks, t)
		}
		return nil
	})
	return tasks, err
}

// Heartbeat keeps one record per member, not synced: the members are this process's watchers,
// which die with it.
func (b *Badger) Heartbeat(ctx context.Context, group, member string, now time.Time, ttl time.Duration) ([]string, error) {
	prefix := prefixWatcher + group + "/"
	var members []string
	err := b.updateVolatile(ctx, func(txn *badger.Txn) error {
		members = members[:0]
		if err := setJSON(txn, prefix+member, now.Add(ttl).UnixNano(), ttl+time.Minute); err != nil {
			return err
		}
		return scan(txn, prefix, func(key, val []byte) error {
			var until int64
			if err := json.Unmarshal(val, &until); err != nil {
				return err
			}
			if until > now.UnixNano() {
				members = append(members, string(key[len(prefix):]))
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(members)
	return members, nil
}

// Interface guards
var _ Watching = (*Badger)(nil)
