package videotask

import (
	"context"
	"sync"
	"time"

	"github.com/mediagw/mediagw/handlers/providers"
)

// turnKey names one account's content reads at one upstream.
type turnKey struct {
	u       *providers.Upstream
	account string
}

// turn is one account's content lookup at an upstream: one at a time; users counts the reads
// holding or waiting for it, so that the board forgets a turn nobody wants.
type turn struct {
	ch    chan struct{}
	users int
}

// turnBoard lets each account make one content lookup at a time at each upstream, so that the
// content part of the upstream's max_rps goes round the accounts that read: one account's many
// reads wait their own turns, not another account's.
type turnBoard struct {
	mu    sync.Mutex
	turns map[turnKey]*turn
}

// with runs fn in the account's turn at u, waiting for it as long as ctx lasts: a turn delays a
// read, and only a share that cannot come within contentWait refuses it (contentCaller). An
// upstream without max_rps has no rate to share, and no turns: fn runs at once.
func (b *turnBoard) with(ctx context.Context, u *providers.Upstream, account string, fn func() error) error {
	if u.MaxRPS <= 0 {
		return fn()
	}
	key := turnKey{u, account}
	b.mu.Lock()
	tr := b.turns[key]
	if tr == nil {
		tr = &turn{ch: make(chan struct{}, 1)}
		b.turns[key] = tr
	}
	tr.users++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if tr.users--; tr.users == 0 {
			delete(b.turns, key)
		}
		b.mu.Unlock()
	}()
	select {
	case tr.ch <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-tr.ch }()
	return fn()
}

// foundResult is a looked-up address and until when it may be opened again.
type foundResult struct {
	address string
	until   time.Time
}

// foundBoard keeps the addresses of results found by content lookups, by task id, while their
// signatures allow (reusableUntil); at most maxFoundResults of them. It is memory only: the
// addresses are never logged nor stored.
type foundBoard struct {
	mu    sync.Mutex
	found map[string]foundResult
}

func (b *foundBoard) get(taskID string, now time.Time) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.found[taskID]
	if !ok || !now.Before(f.until) {
		return "", false
	}
	return f.address, true
}

func (b *foundBoard) put(taskID, address string, until, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.found) >= maxFoundResults {
		for id, f := range b.found {
			if !now.Before(f.until) {
				delete(b.found, id)
			}
		}
		if len(b.found) >= maxFoundResults {
			return
		}
	}
	b.found[taskID] = foundResult{address: address, until: until}
}

func (b *foundBoard) drop(taskID string) {
	b.mu.Lock()
	delete(b.found, taskID)
	b.mu.Unlock()
}
