package storage

import (
	"context"
	"slices"
	"time"
)

// Key layout of watching (after the prefix):
//
//	w:<group>  sorted set: the members of a watcher group by until when they are alive (Unix µs
//	           of the callers' clocks); expires a minute after the last heartbeat
//
// The unfinished tasks of every shard share the one set tu (see redis_tasks.go): a watcher scans
// the ids (cheap: no record is read) and keeps those of its shards.

// scriptHeartbeat: KEYS: group. ARGV: member, now µs, until µs, ttl ms (of the key). Returns the
// members alive at now.
var scriptHeartbeat = newScript(`
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return redis.call('ZRANGE', KEYS[1], 0, -1)`)

// UnfinishedTaskIDs scans the set of unfinished task ids with SSCAN and keeps those of the
// wanted shards; it reads no record.
func (r *Redis) UnfinishedTaskIDs(ctx context.Context, shards int, want func(shard int) bool, fn func(id string) bool) error {
	set := r.key("tu")
	var cursor uint64
	for {
		entry, err := r.client.Do(ctx, r.client.B().Sscan().Key(set).Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		for _, id := range entry.Elements {
			if want(TaskShard(id, shards)) && !fn(id) {
				return nil
			}
		}
		cursor = entry.Cursor
		if cursor == 0 {
			return nil
		}
	}
}

// ReadTasks reads the records in pipelined batches (one round trip per taskBatch ids) and drops
// the ids of expired records from the unfinished set.
func (r *Redis) ReadTasks(ctx context.Context, ids []string) ([]Task, error) {
	tasks := make([]Task, 0, len(ids))
	var gone []string
	err := r.readTasks(ctx, ids, func(id string, t Task, found bool) {
		if found {
			tasks = append(tasks, t)
		} else {
			gone = append(gone, id)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(gone) > 0 {
		// A record that is gone left its id behind only by expiring (a delete removes both at
		// once), and an id is never created again. A failure here only delays that: the records
		// were read.
		if err := r.client.Do(ctx, r.client.B().Srem().Key(r.key("tu")).Member(gone...).Build()).Error(); err != nil {
			r.logger.Debug("dropping expired unfinished-task ids", errField(err))
		}
	}
	return tasks, nil
}

// Heartbeat keeps the group's members in a sorted set by until when they are alive, changed by
// one script.
func (r *Redis) Heartbeat(ctx context.Context, group, member string, now time.Time, ttl time.Duration) ([]string, error) {
	members, err := r.exec(ctx, scriptHeartbeat, []string{r.key("w:", group)},
		[]string{member, itoa(micros(now)), itoa(micros(now.Add(ttl))), millis(ttl + time.Minute)}).AsStrSlice()
	if err != nil {
		return nil, err
	}
	slices.Sort(members)
	return members, nil
}
