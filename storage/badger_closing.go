package storage

import "sync"

// commitGate counts the durable commits in progress, from before their write to the end of the
// disk sync that acknowledges them, so that Close can wait for them: a sync after the database
// was closed would fail (or, in Badger, crash), and the commits waiting for it with it.
type commitGate struct {
	mu     sync.Mutex
	n      int
	closed bool
	// idle, while Close waits, is closed when the last commit in progress leaves.
	idle chan struct{}
}

// enter notes a durable commit starting; it reports false once the store is closing, when
// the commit must not start. Call leave when it is acknowledged (or failed).
func (g *commitGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

// leave notes the end of a commit that enter let in.
func (g *commitGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// close refuses new commits and returns once the ones in progress have left.
func (g *commitGate) close() {
	g.mu.Lock()
	g.closed = true
	if g.n == 0 {
		g.mu.Unlock()
		return
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	<-idle
}

// closing reports whether close was called.
func (g *commitGate) closing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}
