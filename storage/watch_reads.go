package storage

import (
	"context"
	"time"
)

// ShardReads names tasks of one shard that a watcher is about to read from their upstream, the
// lease under which it reads that shard, and the read log in which the reads are recorded.
type ShardReads struct {
	// Lease is the name of the shard's lease (Coordination).
	Lease string
	// Log names the shard's read log.
	Log string
	// IDs are the tasks to be read.
	IDs []string
	// Trim drops the log's records older than the note's keep and keeps the log for twice keep
	// from now on. A caller sets it on each log now and then, at least once per keep; a log
	// never trimmed may be kept for ever.
	Trim bool
}

// ReadLogs record when the watcher last read each task of a shard from its upstream, so that
// whoever takes a shard over reads each of its tasks an interval after its last read, not at
// once (a read twice within an interval) and not an interval after the takeover (a task left
// unread for up to two intervals). The lease guards the log: a read is recorded only while its
// reader holds the shard's lease, so a watcher that has just taken the lease and then reads the
// log sees every read that its predecessor may still make.
type ReadLogs interface {
	// NoteReads records in each group's Log that owner reads the group's IDs at at, for every
	// group whose Lease owner holds (by owner only: a lease that ran out but that nobody took
	// since is still owner's). It returns the indexes of the groups whose lease owner does not
	// hold: their reads must not be made. The record and the check are one step against
	// AcquireLease: once another owner has taken a group's lease, NoteReads refuses the group,
	// and a NoteReads that returned before the lease was taken is in what RecentReads answers
	// from then on. Records older than at−keep are dropped from the groups that ask for it
	// (Trim).
	NoteReads(ctx context.Context, owner string, at time.Time, keep time.Duration, groups []ShardReads) (lost []int, err error)
	// RecentReads returns the ids recorded in log at or after since, each with its latest time.
	RecentReads(ctx context.Context, log string, since time.Time) (map[string]time.Time, error)
}
