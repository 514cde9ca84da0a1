package videotask

import (
	"context"
	"slices"
	"strconv"
	"sync"
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

// readLog names the log of the reads of one shard's tasks, out of w.Shards.
func (w *Watcher) readLog(shard int) string { return w.readLogOf(w.shardLease(shard)) }

// readLogOf names the read log of the shard whose lease is named lease: the same name.
func (w *Watcher) readLogOf(lease string) string { return lease }

// minOwnershipTick bounds the store work of very short intervals (tests, demos): the shard
// leases are renewed at most ten times a second.
const minOwnershipTick = 100 * time.Millisecond

// ownershipTick is how often a watcher renews its shard leases and its heartbeat: a tenth of
// the interval, and not more often than minOwnershipTick.
func (w *Watcher) ownershipTick() time.Duration { return max(w.Interval/10, minOwnershipTick) }

// leaseTerm is how long a shard lease and a heartbeat last from their renewal: three ticks. A
// watcher reads a shard only while its lease has a tick left (readable), so a renewal may come a
// tick late before the reads pause; and when a watcher dies, the others take its shards over
// within a term and a tick (0.4 of an interval when the tick is a tenth of it).
func (w *Watcher) leaseTerm() time.Duration { return 3 * w.ownershipTick() }

// readKeep is how long the reads of a shard's tasks are kept in its read log: an Interval (the
// next holder needs no older read) and a tick.
func (w *Watcher) readKeep() time.Duration { return w.Interval + w.ownershipTick() }

// readable reports whether this watcher may start reading the tasks of a shard now: it holds the
// shard's lease, the lease has a tick left, the shard is not being handed over, and it is not
// being taken (take has scheduled its tasks from its read log). held is false when the shard is
// not this watcher's at all. The caller holds w.mu.
func (w *Watcher) readable(shard int) (ok, held bool) {
	if !w.leased(shard) {
		_, held = w.held[shard]
		return false, held
	}
	return !w.leaving[shard] && !w.now().Before(w.readFrom[shard]), true
}

// leased reports whether this watcher holds the lease of a shard with a tick left. The caller
// holds w.mu.
func (w *Watcher) leased(shard int) bool {
	until, held := w.held[shard]
	return held && !w.now().Add(w.ownershipTick()).After(until)
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
// tasks from their read logs, take), and stops reading shards that are now another watcher's,
// whose leases it frees once its reads of them in flight are done, so that the other watcher
// takes them at its next tick. (When Run stops, leave frees every lease.)
func (w *Watcher) own(ctx context.Context) {
	ticker := time.NewTicker(w.ownershipTick())
	defer ticker.Stop()
	// The scans of the unfinished tasks of the shards taken run in the background: on a store
	// with many unfinished tasks a scan takes longer than a lease lasts, and the ticks that
	// renew the leases and send the heartbeat must go on meanwhile.
	var scans sync.WaitGroup
	defer scans.Wait()
	// The first tick only joins the group, so that instances starting together see each other
	// before they take shards (and do not hand them over again a tick later).
	joined := false
	for {
		if !joined {
			if _, err := w.Tasks.Store.Heartbeat(ctx, w.group(), w.Owner, w.now(), w.leaseTerm()); err != nil && ctx.Err() == nil {
				w.Tasks.Logger.Error("watcher heartbeat", zap.Error(err))
			}
			joined = true
		} else if gained := w.ownTick(ctx); len(gained) > 0 {
			scans.Go(func() { w.watchShards(ctx, gained) })
		}
		select {
		case <-ctx.Done():
			return // Run leaves the group once the last reads are done
		case <-ticker.C:
		}
	}
}

// ownTick is one tick of own after the first: divide, then take what it gained. It returns the
// shards taken, whose unfinished tasks the caller then schedules (watchShards).
//
// take itself runs here, not in the background with the scan: a shard lost and taken again at
// a later tick is marked notYet by divide, and an earlier take still running would clear that
// mark before the later take has read the shard's read log, so that tasks another watcher just
// read would be read again at once.
func (w *Watcher) ownTick(ctx context.Context) []int {
	gained := w.divide(ctx)
	if len(gained) > 0 {
		w.take(ctx, gained)
	}
	return gained
}

// leaseStep is what one tick of divide does with a shard's lease.
type leaseStep uint8

const (
	leaseKeep leaseStep = iota // not held, not to be taken
	leaseRenew
	leaseFree
	leaseTake
)

// divide does one tick of own and returns the shards it just took.
func (w *Watcher) divide(ctx context.Context) []int {
	start := w.now()
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
		return members != nil && members[shard%len(members)] == w.Owner
	}
	// A held shard that is now another watcher's is read no more from here on; its lease is
	// renewed while reads of it are in flight (they were recorded under it), and freed after.
	steps := make([]leaseStep, w.Shards)
	w.mu.Lock()
	for shard := range steps {
		_, held := w.held[shard]
		switch {
		case held && members == nil:
			steps[shard] = leaseRenew
		case held && mine(shard):
			delete(w.leaving, shard)
			steps[shard] = leaseRenew
		case held:
			w.leaving[shard] = true
			steps[shard] = leaseRenew
			if w.reading[shard] == 0 {
				steps[shard] = leaseFree
			}
		case mine(shard):
			steps[shard] = leaseTake
		}
	}
	w.mu.Unlock()

	// result: whether the shard stays held, and until when its lease now runs (zero: as before).
	type result struct {
		keep, gained bool
		until        time.Time
	}
	results := make([]result, w.Shards)
	w.renew(ctx, steps, start, term, func(shard int, renewed, failed bool) {
		switch {
		case renewed:
			results[shard] = result{keep: true, until: start.Add(term)}
		case failed:
			// Kept as it was: readable stops the reads in time, and the next tick tries again.
			results[shard] = result{keep: true}
		}
	})
	forEach(w.Shards, func(shard int) {
		switch steps[shard] {
		case leaseFree:
			w.free(ctx, shard)
		case leaseTake:
			ok, err := w.Tasks.Store.AcquireLease(ctx, w.shardLease(shard), w.Owner, start, term)
			if err != nil && ctx.Err() == nil {
				w.Tasks.Logger.Warn("taking a watch shard lease", zap.Int("shard", shard), zap.Error(err))
			}
			if ok && err == nil {
				results[shard] = result{keep: true, gained: true, until: start.Add(term)}
			}
		}
	})
	var gained []int
	w.mu.Lock()
	for shard, r := range results {
		switch {
		case !r.keep:
			if steps[shard] != leaseTake {
				delete(w.held, shard)
				delete(w.leaving, shard)
			}
		case !r.until.IsZero():
			w.held[shard] = r.until
		}
		if r.gained {
			gained = append(gained, shard)
			w.readFrom[shard] = notYet // until take has scheduled its tasks
		}
	}
	w.mu.Unlock()
	return gained
}

// renew renews the leases of the shards whose step is leaseRenew, all in one call to the store
// (one round trip on Redis, however many shards this watcher holds), and tells done of each
// whether it was renewed, or whether the call failed (nothing is known of the lease then); a
// shard neither renewed nor failed is lost.
func (w *Watcher) renew(ctx context.Context, steps []leaseStep, start time.Time, term time.Duration, done func(shard int, renewed, failed bool)) {
	var shards []int
	var names []string
	for shard, step := range steps {
		if step == leaseRenew {
			shards = append(shards, shard)
			names = append(names, w.shardLease(shard))
		}
	}
	if len(shards) == 0 {
		return
	}
	lost, err := w.Tasks.Store.RenewLeases(ctx, names, w.Owner, start, term)
	if err != nil {
		if ctx.Err() == nil {
			w.Tasks.Logger.Warn("renewing the watch shard leases", zap.Int("shards", len(shards)), zap.Error(err))
		}
		for _, shard := range shards {
			done(shard, false, true)
		}
		return
	}
	isLost := make([]bool, len(shards))
	for _, i := range lost {
		if i >= 0 && i < len(isLost) { // a store answers indexes into names
			isLost[i] = true
		}
	}
	for i, shard := range shards {
		done(shard, !isLost[i], false)
	}
}

// free frees this watcher's lease of a shard whose reads are all recorded and done, so that the
// shard's next watcher takes it at its next tick.
func (w *Watcher) free(ctx context.Context, shard int) {
	if err := w.Tasks.Store.ReleaseLease(ctx, w.shardLease(shard), w.Owner); err != nil && ctx.Err() == nil {
		// The lease then runs out within a term.
		w.Tasks.Logger.Warn("handing a watch shard over", zap.Int("shard", shard), zap.Error(err))
	}
}

// leave frees the held leases (every read is done and recorded in the read logs) and leaves the
// group, so that the remaining watchers take the shards over at their next tick.
func (w *Watcher) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), w.Interval)
	defer cancel()
	w.mu.Lock()
	shards := make([]int, 0, len(w.held))
	for shard := range w.held {
		shards = append(shards, shard)
	}
	w.held = map[int]time.Time{}
	w.leaving = map[int]bool{}
	w.mu.Unlock()
	forEach(len(shards), func(i int) { w.free(ctx, shards[i]) })
	// A zero term ends this watcher's heartbeat: the others count without it from their next
	// tick.
	if _, err := w.Tasks.Store.Heartbeat(ctx, w.group(), w.Owner, w.now(), 0); err != nil {
		w.Tasks.Logger.Warn("leaving the watcher group", zap.Error(err))
	}
}

// notYet is a readFrom of shards being taken: not readable until take sets it.
var notYet = time.Unix(1<<62, 0)

// take prepares the watching of the unfinished tasks of shards this watcher has just taken, which
// watchShards then schedules: each is due an Interval after its last read recorded in its shard's
// read log (by whichever watcher held the shard, this one included), or now when the log has
// none. A task already scheduled here, or scheduled later by rescan, is held back to that time too
// (notBefore). A log that cannot be read keeps its shard from being read for an Interval: late
// rather than read twice. take reads only the read logs, not every unfinished task: it is quick
// enough for a tick of own.
func (w *Watcher) take(ctx context.Context, shards []int) {
	start := w.now()
	since := start.Add(-w.Interval)
	recent := make([]map[string]time.Time, len(shards))
	failed := make([]bool, len(shards))
	forEach(len(shards), func(i int) {
		reads, err := w.Tasks.Store.RecentReads(ctx, w.readLog(shards[i]), since)
		if err != nil {
			failed[i] = true
			if ctx.Err() == nil {
				w.Tasks.Logger.Error("reading a watch shard's read log", zap.Int("shard", shards[i]), zap.Error(err))
			}
		}
		recent[i] = reads
	})
	w.mu.Lock()
	for id, at := range w.notBefore {
		if !at.After(start) {
			delete(w.notBefore, id) // a task that finished, or left this watcher, before it was due
		}
	}
	for i, shard := range shards {
		if failed[i] {
			w.readFrom[shard] = start.Add(w.Interval)
			continue
		}
		for id, at := range recent[i] {
			if next := at.Add(w.Interval); next.After(start) {
				w.notBefore[id] = next
			}
		}
		delete(w.readFrom, shard)
	}
	w.mu.Unlock()
}

// watchShards schedules every unfinished task of the given shards that is not already scheduled
// or being read, due now (or when notBefore says).
func (w *Watcher) watchShards(ctx context.Context, shards []int) {
	want := make(map[int]bool, len(shards))
	for _, s := range shards {
		want[s] = true
	}
	err := w.Tasks.Store.UnfinishedTaskIDs(ctx, w.Shards, func(shard int) bool { return want[shard] }, func(id string) bool {
		w.schedule(id, w.now())
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
