package videotask

import (
	"time"

	"github.com/mediagw/mediagw/handlers/providers"
)

// The watcher's reads of upstreams in flight (a batch of one upstream's due tasks, read by one
// call of its task list or one task after another) are shared out between the upstreams that
// have work, so that upstreams whose reads hang (a provider in a partial outage, answering each
// read only at the upstream_timeout) leave the others read on time, however many they are:
//   - an upstream with no read in flight may always start one (so each configured upstream has
//     one read of its own, beyond the Concurrency);
//   - one with reads in flight may start another only while fewer than the Concurrency are in
//     flight, within its share, the Concurrency divided by one more than the upstreams that
//     have work (so the share shrinks as more of them have work, and a newcomer has room), and
//     only while that leaves a read free for each other upstream with work and none in flight
//     (at least one).
//
// An upstream has work while it has reads in flight or had due tasks within the last two
// Intervals. So the reads in flight are at most the Concurrency plus one per upstream, and
// neither the slow upstreams' further reads nor their first ones ever take the read that a
// healthy upstream needs.

// hasWork reports whether u had due tasks within the last two Intervals or has reads in flight
// (w.mu held).
func (w *Watcher) hasWork(u *providers.Upstream, now time.Time) bool {
	return w.upstreamReads[u] > 0 || now.Sub(w.upstreamDue[u]) < 2*w.Interval
}

// startUpstream takes one of the watcher's reads in flight for u, whose due tasks a poll is about
// to read, or reports false when the rules above leave none to u now.
func (w *Watcher) startUpstream(u *providers.Upstream) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	w.upstreamDue[u] = now
	working, idle := 0, 0
	for v, at := range w.upstreamDue {
		switch {
		case w.hasWork(v, now):
			working++
			if v != u && w.upstreamReads[v] == 0 {
				idle++
			}
		case now.Sub(at) >= 2*w.Interval:
			delete(w.upstreamDue, v)
		}
	}
	free := w.Concurrency - w.readsInFlight
	if w.upstreamReads[u] > 0 && (w.upstreamReads[u] >= max(1, w.Concurrency/(working+1)) || free <= max(1, idle)) {
		return false
	}
	w.upstreamReads[u]++
	w.readsInFlight++
	return true
}

// doneUpstream gives back a read of u that startUpstream took.
func (w *Watcher) doneUpstream(u *providers.Upstream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.readsInFlight--
	if w.upstreamReads[u]--; w.upstreamReads[u] <= 0 {
		delete(w.upstreamReads, u)
	}
}
