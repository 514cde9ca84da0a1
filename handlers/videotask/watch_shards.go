package videotask

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// DefaultWatchShards is how many shards the unfinished tasks are divided into between the
// watchers of gateway instances sharing a store.
const DefaultWatchShards = 64

// watchGroup names the heartbeats by which the watchers sharing a store find each other.
const watchGroup = "video-tasks"

// group names the heartbeats of the watchers that divide the tasks into as many shards as this
// one. Watchers with another number (another version, during a rolling upgrade) are not counted:
// shard i is another set of tasks for them, so dividing with them could leave tasks to nobody.
// Each number's watchers read every task; a task is then read once per number and interval.
func (w *Watcher) group() string { return watchGroup + "/" + strconv.Itoa(w.Shards) }

// shardLease names the lease of one shard of the unfinished tasks, out of w.Shards.
func (w *Watcher) shardLease(shard int) string {
	return "watch/" + strconv.Itoa(w.Shards) + "/" + strconv.Itoa(shard)
}

// minOwnershipTick bounds the store work of very short intervals (tests, demos): the shard
// leases are renewed at most ten times a second.
const minOwnershipTick = 100 * time.Millisecond

// ownershipTick is how often a watcher renews its shard leases and its heartbeat: a fifth of
// the interval, and not more often than minOwnershipTick.
func (w *Watcher) ownershipTick() time.Duration { return max(w.Interval/5, minOwnershipTick) }

// leaseTerm is how long a shard lease and a heartbeat last from their renewal: an Interval past
// the last read that a renewal allows (readable), plus a tick for that read to reach the
// upstream.
func (w *Watcher) leaseTerm() time.Duration { return w.Interval + 2*w.ownershipTick() }

// readable reports whether this watcher may read the tasks of a shard now: it holds the shard's
// lease and the lease outlasts a read started now by an Interval (and a tick for the read to
// reach the upstream), so that whoever takes the shard next reads its tasks an Interval later
// at the earliest. held is false when the shard is not this watcher's at all. The caller holds
// w.mu.
func (w *Watcher) readable(shard int) (ok, held bool) {
	until, held := w.held[shard]
	return held && !now().Add(w.leaseTerm()-w.ownershipTick()).After(until), held
}

// startReads sorts ids into those this watcher reads now, whose shards then count them as reads
// in flight until doneReads, those to try again soon (the lease's renewal is late), and those
// of shards that are not this watcher's.
func (w *Watcher) startReads(ids []string) (mine, late, others []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		shard := storage.TaskShard(id, w.Shards)
		switch ok, held := w.readable(shard); {
		case ok:
			mine = append(mine, id)
			w.reading[shard]++
		case held:
			late = append(late, id)
		default:
			others = append(others, id)
		}
	}
	return mine, late, others
}

// doneReads ends the reads that startReads counted.
func (w *Watcher) doneReads(ids []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		shard := storage.TaskShard(id, w.Shards)
		if w.reading[shard]--; w.reading[shard] <= 0 {
			delete(w.reading, shard)
		}
	}
}

// own keeps this watcher's share of the shards: every tick it sends a heartbeat, which also
// tells it the live watchers; shard i is for the i-th of them (in order, modulo their number).
// It renews the leases of its shards, takes those of its shards that are free (and watches their
// tasks at once), and stops reading shards that are now another watcher's, whose leases then run
// out (cut short to an Interval after its last read of them) so that the other watcher takes
// them. (When Run stops, leave hands every shard over.)
func (w *Watcher) own(ctx context.Context) {
	ticker := time.NewTicker(w.ownershipTick())
	defer ticker.Stop()
	// The first tick only joins the group, so that instances starting together see each other
	// before they take shards (and do not hand them over again a lease term later).
	joined := false
	for {
		if !joined {
			if _, err := w.Tasks.Store.Heartbeat(ctx, w.group(), w.Owner, now(), w.leaseTerm()); err != nil && ctx.Err() == nil {
				w.Tasks.Logger.Error("watcher heartbeat", zap.Error(err))
			}
			joined = true
		} else if gained := w.divide(ctx); len(gained) > 0 {
			w.watchShards(ctx, gained)
		}
		select {
		case <-ctx.Done():
			return // Run leaves the group once the last reads are done
		case <-ticker.C:
		}
	}
}

// divide does one tick of own and returns the shards it just took.
func (w *Watcher) divide(ctx context.Context) []int {
	start := now()
	term := w.leaseTerm()
	members, err := w.Tasks.Store.Heartbeat(ctx, w.group(), w.Owner, start, term)
	if err != nil {
		if ctx.Err() == nil {
			w.Tasks.Logger.Error("watcher heartbeat", zap.Error(err))
		}
		members = nil // renew what is held, take nothing new
	} else if !slices.Contains(members, w.Owner) {
		members = append(members, w.Owner)
		slices.Sort(members)
	}
	mine := func(shard int) bool {
		if members == nil {
			return false
		}
		return members[shard%len(members)] == w.Owner
	}
	w.mu.Lock()
	held := make(map[int]bool, len(w.held))
	for shard := range w.held {
		held[shard] = true
	}
	w.mu.Unlock()

	// outcome: whether the shard stays held, and until when its lease now runs (zero: as before).
	type outcome struct {
		keep, gained bool
		until        time.Time
	}
	results := make([]outcome, w.Shards)
	forEach(w.Shards, func(shard int) {
		switch {
		case held[shard] && (members == nil || mine(shard)):
			err := w.Tasks.Store.RenewLease(ctx, w.shardLease(shard), w.Owner, start, term)
			switch {
			case err == nil:
				results[shard] = outcome{keep: true, until: start.Add(term)}
			case errors.Is(err, storage.ErrLeaseLost):
			default:
				// Kept as it was: readable stops the reads in time, and the next tick tries
				// again.
				results[shard] = outcome{keep: true}
				if ctx.Err() == nil {
					w.Tasks.Logger.Warn("renewing a watch shard lease", zap.Int("shard", shard), zap.Error(err))
				}
			}
		case !held[shard] && mine(shard):
			ok, err := w.Tasks.Store.AcquireLease(ctx, w.shardLease(shard), w.Owner, start, term)
			if err != nil && ctx.Err() == nil {
				w.Tasks.Logger.Warn("taking a watch shard lease", zap.Int("shard", shard), zap.Error(err))
			}
			if ok && err == nil {
				results[shard] = outcome{keep: true, gained: true, until: start.Add(term)}
			}
		}
		// A held shard that is now another watcher's is dropped: not read, not renewed.
	})
	var gained, given []int
	lastRead := map[int]time.Time{}
	w.mu.Lock()
	for shard, r := range results {
		switch {
		case !r.keep:
			if _, ok := w.held[shard]; ok && members != nil && !mine(shard) && w.reading[shard] == 0 {
				// Another watcher's now, and no read of it is in flight: its lease can end an
				// Interval after the last read, not a whole term after the last renewal.
				given = append(given, shard)
				lastRead[shard] = w.lastRead[shard]
			}
			delete(w.held, shard)
		case !r.until.IsZero():
			w.held[shard] = r.until
		}
		if r.gained {
			gained = append(gained, shard)
		}
	}
	w.mu.Unlock()
	forEach(len(given), func(i int) { w.handOver(ctx, given[i], lastRead[given[i]]) })
	return gained
}

// handOver cuts this watcher's lease of a shard it no longer reads to an Interval (and a tick)
// after its last read of the shard, or frees it when that has passed, so that the shard's next
// watcher takes it as soon as it may.
func (w *Watcher) handOver(ctx context.Context, shard int, lastRead time.Time) {
	var err error
	if end := lastRead.Add(w.Interval + w.ownershipTick()); !lastRead.IsZero() && end.After(now()) {
		err = w.Tasks.Store.RenewLease(ctx, w.shardLease(shard), w.Owner, lastRead, end.Sub(lastRead))
	} else {
		err = w.Tasks.Store.ReleaseLease(ctx, w.shardLease(shard), w.Owner)
	}
	if err != nil && !errors.Is(err, storage.ErrLeaseLost) && ctx.Err() == nil {
		w.Tasks.Logger.Warn("handing a watch shard over", zap.Int("shard", shard), zap.Error(err))
	}
}

// leave cuts the held leases to an Interval after this watcher's last read of each shard (or
// frees them when it read none) and leaves the group, so that the remaining watchers take the
// shards over as soon as that allows.
func (w *Watcher) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), w.Interval)
	defer cancel()
	w.mu.Lock()
	held := make(map[int]time.Time, len(w.held))
	for shard := range w.held {
		held[shard] = w.lastRead[shard]
	}
	w.held = map[int]time.Time{}
	w.mu.Unlock()
	shards := make([]int, 0, len(held))
	for shard := range held {
		shards = append(shards, shard)
	}
	forEach(len(shards), func(i int) { w.handOver(ctx, shards[i], held[shards[i]]) })
	// A zero term ends this watcher's heartbeat: the others count without it from their next
	// tick.
	if _, err := w.Tasks.Store.Heartbeat(ctx, w.group(), w.Owner, now(), 0); err != nil {
		w.Tasks.Logger.Warn("leaving the watcher group", zap.Error(err))
	}
}

// watchShards schedules every unfinished task of the given shards that is not already
// scheduled or being read, due now (or an Interval after this watcher's last read of the shard).
func (w *Watcher) watchShards(ctx context.Context, shards []int) {
	want := make(map[int]bool, len(shards))
	for _, s := range shards {
		want[s] = true
	}
	// A shard this watcher held before (and dropped when the group changed) is not read again
	// within an Interval of its last read here.
	due := make(map[int]time.Time, len(shards))
	w.mu.Lock()
	for _, s := range shards {
		due[s] = now()
		if next := w.lastRead[s].Add(w.Interval); next.After(due[s]) {
			due[s] = next
		}
	}
	w.mu.Unlock()
	err := w.Tasks.Store.UnfinishedTaskIDs(ctx, w.Shards, func(shard int) bool { return want[shard] }, func(id string) bool {
		w.schedule(id, due[storage.TaskShard(id, w.Shards)])
		return ctx.Err() == nil
	})
	if err != nil && ctx.Err() == nil {
		w.Tasks.Logger.Error("reading the unfinished tasks", zap.Error(err))
	}
}

// heldShards lists the shards this watcher holds.
func (w *Watcher) heldShards() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	shards := make([]int, 0, len(w.held))
	for shard := range w.held {
		shards = append(shards, shard)
	}
	slices.Sort(shards)
	return shards
}
