package storage

import (
	"fmt"
	"sync"
	"time"
)

// maxGather bounds how long a sync waits for the durable commits in progress to end, so that
// it covers them too.
const maxGather = time.Millisecond

// maxOverlap is how many disk syncs may run at once. With one, a commit made while a sync runs
// waits for that sync to end, then for its own. A second sync may instead start while the first
// runs (the kernel lets fdatasync calls on one file overlap: the later one also waits for the
// pages the earlier one is writing), so that such a commit waits for one sync only. Two lower
// the store's commit latency, but each sync then covers fewer commits and the gateway's creates
// cost more CPU, not less (bench/README.md has the figures). So one; logSync and groupSync work
// with more.
const maxOverlap = 1

// groupSync lets concurrent committers share one disk sync. A commit needs a sync that started
// after it: when it ends it is given the next sync, the one not started yet (made then if there
// is none), and waits for it; the first to wait starts it (its leader). Before it starts, the
// sync waits for a free slot (at most maxOverlap syncs run at once), then (at most maxGather)
// for the durable commits in progress to end, since each of those would otherwise need a sync
// of its own right after: under load one sync then covers every create in flight, and a lone
// commit does not wait at all.
type groupSync struct {
	// sync makes every commit made before it started durable, and with valueLog the values of
	// those commits in Badger's value log too. Calls may overlap (up to maxOverlap, or overlap
	// when set).
	sync func(valueLog bool) error
	// maxGather, when set (tests), replaces the package's maxGather.
	maxGather time.Duration
	// overlap, when set, replaces maxOverlap (tests).
	overlap int
	// slots holds a token for every sync running; made on first use.
	slots   chan struct{}
	mu      sync.Mutex
	started uint64 // syncs started
	// next is the sync that commits ending now are given: not started yet.
	next *syncRound
	// pending counts the durable commits in progress (between begin and end); gathered, while
	// a sync waits for them, is closed when the last one ends.
	pending  int
	gathered chan struct{}
	// timer bounds a gather; only the leader of next gathers, so one timer serves every
	// gather.
	timer *time.Timer
}

// syncRound is one disk sync and the commits that wait for it.
type syncRound struct {
	done chan struct{} // closed when the sync has finished
	err  error         // of the sync, set before done is closed
	led  bool          // a commit waits for it and starts it (under groupSync.mu)
	// valueLog: a commit it covers wrote to the value log, which it must sync too (under
	// groupSync.mu, until it starts).
	valueLog bool
}

// begin notes a durable commit starting; call end when it has committed (or failed).
func (g *groupSync) begin() {
	g.mu.Lock()
	g.pending++
	g.mu.Unlock()
}

// end notes that a commit begun with begin has committed (or failed), and returns the sync
// that covers it, for wait. valueLog tells that the commit wrote to Badger's value log.
func (g *groupSync) end(valueLog bool) *syncRound {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending--
	if g.pending == 0 && g.gathered != nil {
		close(g.gathered)
		g.gathered = nil
	}
	if g.next == nil {
		g.next = &syncRound{done: make(chan struct{})}
	}
	if valueLog {
		g.next.valueLog = true
	}
	return g.next
}

// wait returns once r, a sync that end returned, has finished, starting it if no one has. A
// panic of the sync becomes its error, so that no waiter is left behind.
func (g *groupSync) wait(r *syncRound) (err error) {
	g.mu.Lock()
	if r.led {
		g.mu.Unlock()
		<-r.done
		return r.err
	}
	r.led = true
	if g.slots == nil {
		n := g.overlap
		if n <= 0 {
			n = maxOverlap
		}
		g.slots = make(chan struct{}, n)
	}
	slots := g.slots
	g.mu.Unlock()

	slots <- struct{}{} // commits that end meanwhile are given r
	defer func() {
		if p := recover(); p != nil {
			r.err = fmt.Errorf("disk sync failed: %v", p)
		}
		<-slots
		close(r.done)
		err = r.err
	}()
	g.mu.Lock()
	g.gather() // so are commits that end while it gathers
	g.next = nil
	g.started++
	valueLog := r.valueLog
	g.mu.Unlock()
	r.err = g.sync(valueLog)
	return r.err
}

// gather waits, with g.mu held on entry and on return, until no durable commit is in progress,
// or maxGather has passed.
func (g *groupSync) gather() {
	if g.pending == 0 {
		return
	}
	gathered := make(chan struct{})
	g.gathered = gathered
	d := maxGather
	if g.maxGather > 0 {
		d = g.maxGather
	}
	if g.timer == nil {
		g.timer = time.NewTimer(d)
	} else {
		g.timer.Reset(d)
	}
	t := g.timer
	g.mu.Unlock()
	select {
	case <-gathered:
	case <-t.C:
	}
	t.Stop() // since Go 1.23 a stopped timer delivers no stale tick after Reset
	g.mu.Lock()
	if g.gathered == gathered {
		g.gathered = nil
	}
}

// syncs is the number of disk syncs started so far.
func (g *groupSync) syncs() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}
