package storage

import (
	"fmt"
	"sync"
)

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
// is none), and waits for it; the first to wait starts it (its leader) as soon as a slot is free
// (at most maxOverlap syncs run at once). Under load the commits that end while a sync runs all
// share the next one, and a lone commit waits for its own sync only.
//
// A sync starts without waiting for the commits still in progress. Waiting for them (up to a
// millisecond, before session 20) made each sync cover a few more commits, but every create
// waited that much longer, and with 32 connections the gateway's core idled while they waited:
// in paired runs of bench/run.sh a priced create was 15-40 % slower with the wait (bench/README.md,
// session 20).
type groupSync struct {
	// sync makes every commit made before it started durable, and with valueLog the values of
	// those commits in Badger's value log too. Calls may overlap (up to maxOverlap, or overlap
	// when set).
	sync func(valueLog bool) error
	// overlap, when set, replaces maxOverlap (tests).
	overlap int
	// slots holds a token for every sync running; made on first use.
	slots   chan struct{}
	mu      sync.Mutex
	started uint64 // syncs started
	// next is the sync that commits ending now are given: not started yet.
	next *syncRound
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

// end notes that a durable commit has committed (or failed), and returns the sync that covers
// it, for wait. valueLog tells that the commit wrote to Badger's value log.
func (g *groupSync) end(valueLog bool) *syncRound {
	g.mu.Lock()
	defer g.mu.Unlock()
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
	g.next = nil
	g.started++
	valueLog := r.valueLog
	g.mu.Unlock()
	r.err = g.sync(valueLog)
	return r.err
}

// syncs is the number of disk syncs started so far.
func (g *groupSync) syncs() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}
