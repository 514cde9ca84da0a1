package storage

import (
	"context"
	"testing"
)

// TestCacheFillAgainstRevoke: a lookup reads a key from disk, a revoke is stored and applied to
// the cache, and only then does the lookup put what it read into the cache. The revoke must win:
// the next lookup sees the key disabled.
func TestCacheFillAgainstRevoke(t *testing.T) {
	ctx := context.Background()
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k, err := b.CreateKey(ctx, APIKey{ID: "key_1", Hash: HashSecret("mg-1"), Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	b.cache.changed(func() { clear(b.cache.keys) }) // as after a restart: nothing cached

	read, resume := make(chan struct{}), make(chan struct{})
	b.fillHook = func() { close(read); <-resume }
	done := make(chan APIKey)
	go func() {
		got, _ := b.KeyByHash(ctx, k.Hash)
		done <- got
	}()
	<-read // the lookup has read the enabled key and not yet cached it
	b.fillHook = nil
	k.Disabled = true
	if _, err := b.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	close(resume)
	if first := <-done; first.Disabled {
		t.Fatal("the racing lookup was expected to return what it read (enabled)")
	}
	got, err := b.KeyByHash(ctx, k.Hash)
	if err != nil || !got.Disabled {
		t.Fatalf("lookup after the revoke = %+v, %v; the stale fill won", got, err)
	}

	// The same for an account disabled while its record is being read.
	read, resume = make(chan struct{}), make(chan struct{})
	b.fillHook = func() { close(read); <-resume }
	go func() { _, _ = b.Account(ctx, "acme"); close(done) }()
	<-read
	b.fillHook = nil
	if _, err := b.SaveAccount(ctx, Account{Name: "acme", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	close(resume)
	<-done
	if a, err := b.Account(ctx, "acme"); err != nil || !a.Disabled {
		t.Fatalf("account after disable = %+v, %v; the stale fill won", a, err)
	}
}
