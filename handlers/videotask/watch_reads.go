package videotask

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// The read logs: before reading tasks from their upstream, a watcher records in the read log of
// each task's shard, under the shard's lease, that it reads them now (storage.ReadLogs), so that
// whoever takes the shard next reads each task an Interval after that (take).

// skipReason says why a task whose read was started is not read after all.
type skipReason uint8

const (
	skipNone skipReason = iota
	// skipLost: its shard's lease is another watcher's.
	skipLost
	// skipLate: the lease has less than a tick left by now, or the reads would go out after
	// the time recorded for them (the store calls were slow, or this process stalled); a
	// renewal may come, and a read a little later is recorded again.
	skipLate
)

// readSlack is how far ahead of a batch's start its reads are recorded: a tick. They must go
// out by then, or not at all (dropLost). The next holder of the shard may read the tasks an
// Interval after the recorded time, so a read that went out later would be read again too soon;
// one that went out sooner is read again up to a tick later than its Interval. A tick ahead
// leaves room for a loaded process: a read that reaches its upstream up to a tick after the
// recorded time still leaves 0.9 of an Interval before the next holder's read.
func (w *Watcher) readSlack() time.Duration { return w.ownershipTick() }

// dropLost lets go of the shards whose leases NoteReads found lost, and says which of the
// groups' tasks are not to be read: those and, when the reads recorded for at would go out after
// it, every one.
func (w *Watcher) dropLost(groups []storage.ShardReads, lost []int, at time.Time) map[string]skipReason {
	skip := map[string]skipReason{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, i := range lost {
		shard := storage.TaskShard(groups[i].IDs[0], w.Shards)
		delete(w.held, shard)
		delete(w.leaving, shard)
		for _, id := range groups[i].IDs {
			skip[id] = skipLost
		}
	}
	stale := now().After(at)
	for _, g := range groups {
		if shard := storage.TaskShard(g.IDs[0], w.Shards); skip[g.IDs[0]] == skipNone && (stale || !w.leased(shard)) {
			for _, id := range g.IDs {
				skip[id] = skipLate
			}
		}
	}
	return skip
}

// readGroups groups task ids by shard, with each shard's lease and read log. A log is trimmed
// every half Interval (it then holds at most one and a half Intervals of reads), not at every
// note: that would double the store's work per note.
func (w *Watcher) readGroups(ids []string) []storage.ShardReads {
	index := map[int]int{}
	var groups []storage.ShardReads
	for _, id := range ids {
		shard := storage.TaskShard(id, w.Shards)
		i, ok := index[shard]
		if !ok {
			i = len(groups)
			index[shard] = i
			groups = append(groups, storage.ShardReads{Lease: w.shardLease(shard), Log: w.readLog(shard)})
		}
		groups[i].IDs = append(groups[i].IDs, id)
	}
	at := now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for shard, i := range index {
		if at.Sub(w.trimmed[shard]) >= w.Interval/2 {
			groups[i].Trim = true
			w.trimmed[shard] = at
		}
	}
	return groups
}

// noteSlowReads records again, at the time they ended, reads that may have reached their
// upstream after the time recorded before them (one call per task, or after the calls of
// another upstream), so that the next holder of their shards does not read them again too soon.
// The shards' leases are still this watcher's: a shard being handed over is freed only after
// its reads in flight.
func (w *Watcher) noteSlowReads(ctx context.Context, at time.Time, ids []string) {
	end := now()
	if len(ids) == 0 || !end.After(at) {
		return
	}
	if _, err := w.Tasks.Store.NoteReads(ctx, w.Owner, end, w.readKeep(), w.readGroups(ids)); err != nil && ctx.Err() == nil {
		w.Tasks.Logger.Warn("recording slow watched reads", zap.Error(err))
	}
}
