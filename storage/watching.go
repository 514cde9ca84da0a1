package storage

import (
	"context"
	"hash/fnv"
	"time"
)

// Watching is what the task watchers of gateway instances sharing one store need to divide the
// unfinished tasks between them without touching each task more than once per interval: the
// tasks are split into shards by a hash of their id (TaskShard), each shard is watched by one
// instance at a time under a lease (Coordination), and the live instances find each other
// through heartbeats.
type Watching interface {
	// UnfinishedTaskIDs calls fn with the id of every unfinished task whose shard
	// (TaskShard(id, shards)) want accepts, until fn returns false. Like UnfinishedTasks it reads
	// an index, not the records, so it may name a task whose record has just expired; ReadTasks
	// then leaves it out.
	UnfinishedTaskIDs(ctx context.Context, shards int, want func(shard int) bool, fn func(id string) bool) error
	// ReadTasks returns the records of the given task ids that exist, in the order of ids, in as
	// few round trips as the backend allows. Ids without a record are left out (and leave the
	// unfinished index, if an expired record left them there).
	ReadTasks(ctx context.Context, ids []string) ([]Task, error)
	// Heartbeat records that member of group is alive until now+ttl, and returns the members of
	// group alive at now (member included), sorted.
	Heartbeat(ctx context.Context, group, member string, now time.Time, ttl time.Duration) ([]string, error)
	// ReadLogs record the last read of each task of a shard, for whoever takes the shard next.
	ReadLogs
}

// TaskShard is the shard, out of shards, that a task id belongs to: a hash (FNV-1a) of the id.
func TaskShard(id string, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(id)) // writes to a hash never fail
	return int(h.Sum32() % uint32(shards))
}
