package caddymodule

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestKeptCreateOutlivesItsClient: a create's attempt is not cancelled when its client leaves,
// but grace later; one that follows its client (an event stream) is cancelled at once, also when
// the client left before; end releases it.
func TestKeptCreateOutlivesItsClient(t *testing.T) {
	const grace = 150 * time.Millisecond
	cancelled := func(k *keptCreate) bool { return k.ctx.Err() != nil }

	client, leave := context.WithCancel(context.Background())
	k := keepCreating(client, grace)
	// When the attempt is cancelled, against when its client left: a timer never fires early,
	// however loaded the machine, where a check after a sleep may come past the grace.
	cut := make(chan time.Time, 1)
	context.AfterFunc(k.ctx, func() { cut <- time.Now() })
	left := time.Now()
	leave()
	select {
	case at := <-cut:
		if at.Sub(left) < grace {
			t.Fatalf("the attempt was cancelled %v after its client left, before the grace (%v) ran out", at.Sub(left), grace)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the attempt outlived the grace after its client left")
	}
	k.end()

	client, leave = context.WithCancel(context.Background())
	k = keepCreating(client, time.Hour)
	k.followClient()
	if cancelled(k) {
		t.Fatal("following a client that is still there cancelled the attempt")
	}
	leave()
	select {
	case <-k.ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("an attempt following its client outlived it")
	}
	k.end()

	client, leave = context.WithCancel(context.Background())
	k = keepCreating(client, time.Hour)
	leave()
	awaitLeft(t, k)
	if cancelled(k) {
		t.Fatal("the attempt was cancelled as its client left")
	}
	k.followClient()
	if !cancelled(k) {
		t.Fatal("following a client that had left did not cancel the attempt")
	}
	k.end()

	client, leave = context.WithCancel(context.Background())
	defer leave()
	k = keepCreating(client, time.Hour)
	k.end()
	if !cancelled(k) {
		t.Fatal("end did not release the context")
	}
}

// TestKeptCreateEndLeavesNoGraceTimer: a client that leaves just as its create ends (the server
// cancels the request's context from its own goroutine) leaves no grace timer behind end, which
// would keep the request's context values for createGrace. One P orders the watch's goroutine
// after end.
func TestKeptCreateEndLeavesNoGraceTimer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	client, leave := context.WithCancel(context.Background())
	k := keepCreating(client, time.Hour)
	leave() // starts the watch's goroutine
	k.end()
	awaitLeft(t, k) // the watch's goroutine has run
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cut != nil && k.cut.Stop() {
		t.Fatal("a grace timer started after end still runs")
	}
}

// awaitLeft waits until k's watch has seen its client leave.
func awaitLeft(t *testing.T, k *keptCreate) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		k.mu.Lock()
		left := k.left
		k.mu.Unlock()
		if left {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch never saw the client leave")
		}
	}
}
