package caddymodule

import (
	"context"
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
	leave()
	time.Sleep(grace / 3)
	if cancelled(k) {
		t.Fatal("the attempt was cancelled as its client left, before the grace ran out")
	}
	select {
	case <-k.ctx.Done():
	case <-time.After(5 * grace):
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
	time.Sleep(10 * time.Millisecond) // the watch has seen the client leave
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
