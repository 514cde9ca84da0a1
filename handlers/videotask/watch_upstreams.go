package videotask

import "github.com/mediagw/mediagw/handlers/providers"

// upstreamShare is how many of the watcher's polls may read one upstream at once: half its
// Concurrency, at least one. An upstream whose reads hang (a provider in a partial outage,
// answering each read only at the upstream_timeout) then holds at most half the polls, and
// the tasks of every other upstream are read on time with the rest. With a Concurrency of 1 the
// one poll is every upstream's.
func (w *Watcher) upstreamShare() int { return max(1, w.Concurrency/2) }

// startUpstream takes one of u's reads in flight, or reports false when its share is taken.
func (w *Watcher) startUpstream(u *providers.Upstream) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.upstreamReads[u] >= w.upstreamShare() {
		return false
	}
	w.upstreamReads[u]++
	return true
}

// doneUpstream gives back a read of u that startUpstream took.
func (w *Watcher) doneUpstream(u *providers.Upstream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.upstreamReads[u]--; w.upstreamReads[u] <= 0 {
		delete(w.upstreamReads, u)
	}
}
