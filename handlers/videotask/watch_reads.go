package videotask

import (
	"context"
	"maps"
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
	// skipLate: the lease has less than a tick left by now (the store calls were slow, or this
	// process stalled); a renewal may come.
	skipLate
)

// readSlack is how far ahead of a batch's start its reads are recorded: a tick. They must go
// out by then, or be recorded again (noteAgain). The next holder of the shard may read the tasks an
// Interval after the recorded time, so a read that went out later would be read again too soon;
// one that went out sooner is read again up to a tick later than its Interval. A tick ahead
// leaves room for a loaded process: a read that reaches its upstream up to a tick after the
// recorded time still leaves 0.9 of an Interval before the next holder's read.
func (w *Watcher) readSlack() time.Duration { return w.ownershipTick() }

// noteAgain records again, a tick ahead of now, the reads of the groups that dropLost kept, when
// the store calls took so long that they would go out after the time recorded first (at). It
// returns the time now recorded, and adds to skip the tasks not to be read after all. (Once:
// under a load that slow, recording until the record is quick would only add to the load.)
func (w *Watcher) noteAgain(ctx context.Context, at time.Time, groups []storage.ShardReads, skip map[string]skipReason) (time.Time, error) {
	if !w.now().After(at) {
		return at, nil
	}
	var kept []storage.ShardReads
	for _, g := range groups {
		if skip[g.IDs[0]] == skipNone {
			kept = append(kept, g)
		}
	}
	if len(kept) == 0 {
		return at, nil
	}
	at = w.now().Add(w.readSlack())
	lost, err := w.Tasks.Store.NoteReads(ctx, w.Owner, at, w.readKeep(), kept)
	if err != nil {
		return at, err
	}
	maps.Copy(skip, w.dropLost(kept, lost))
	return at, nil
}

// dropLost lets go of the shards whose leases NoteReads found lost, and says which of the
// groups' tasks are not to be read: those, and those of shards whose lease has less than a tick
// left.
func (w *Watcher) dropLost(groups []storage.ShardReads, lost []int) map[string]skipReason {
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
	for _, g := range groups {
		if shard := storage.TaskShard(g.IDs[0], w.Shards); skip[g.IDs[0]] == skipNone && !w.leased(shard) {
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
			lease := w.shardLease(shard)
			groups = append(groups, storage.ShardReads{Lease: lease, Log: w.readLogOf(lease)})
		}
		groups[i].IDs = append(groups[i].IDs, id)
	}
	at := w.now()
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
	end := w.now()
	if len(ids) == 0 || !end.After(at) {
		return
	}
	groups := w.readGroups(ids)
	lost, err := w.Tasks.Store.NoteReads(ctx, w.Owner, end, w.readKeep(), groups)
	if err != nil {
		if ctx.Err() == nil {
			w.Tasks.Logger.Warn("recording slow watched reads", zap.Error(err))
		}
		return
	}
	// The reads are done (dropLost's list of reads to skip is of no use here), but a shard
	// whose lease was found lost is let go of, as poll does, so that it is not read under
	// another watcher's lease.
	w.dropLost(groups, lost)
}
