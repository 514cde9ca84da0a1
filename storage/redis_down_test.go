package storage_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// TestRedisReadsFailWhileTheServerIsDown: while the server is down, a read made with a context
// that has no deadline (as a request's has not) fails within seconds instead of being retried
// for ever, so the gateway answers a 5xx instead of holding every request open; once the server
// is back, reads succeed again. (rueidis retries a read-only command over a lost connection
// for as long as the context allows: the key lookup of every request hung.)
func TestRedisReadsFailWhileTheServerIsDown(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ctx := context.Background()
	s := openRedis(t, redisLocation(srv.URL(), "down"))
	defer s.Close()
	hash := storage.HashSecret("mg-down")
	if _, err := s.CreateKey(ctx, storage.APIKey{ID: "key_d", Hash: hash, Account: "acme"}); err != nil {
		t.Fatal(err)
	}

	// Read it from the client-side cache, as every request does, once this process's own write
	// no longer sends reads past the cache.
	time.Sleep(2*storage.MaxDirectoryStaleness + 100*time.Millisecond)
	if _, err := s.KeyByHash(ctx, hash); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	for _, read := range []struct {
		name string
		do   func() error
	}{
		{"key lookup", func() error { _, err := s.KeyByHash(ctx, hash); return err }},
		{"account", func() error { _, err := s.Account(ctx, "acme"); return err }},
	} {
		// The client-side cache may answer a read or two more, until the client has seen its
		// connection close (it then drops the cache): those succeed at once. What must not
		// happen is a read that waits: every read answers within seconds, and the reads fail
		// once the loss is seen.
		failedBy := time.Now().Add(10 * time.Second)
		for {
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- read.do() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s with the server down has not answered in 30 s", read.name)
			}
			if err != nil {
				t.Logf("%s with the server down: %v after %v", read.name, err, time.Since(start).Round(time.Millisecond))
				break
			}
			if time.Now().After(failedBy) {
				t.Fatalf("%s with the server down still succeeds after 10 s", read.name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	srv.Restart(false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		k, err := s.KeyByHash(ctx, hash)
		if err == nil && k.Account == "acme" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart the lookup = %+v, %v", k, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRedisReadsFailWhileTheServerHangs: a server that takes connections but answers nothing
// (stopped with SIGSTOP, as a host that froze) fails a read within seconds too, instead of a
// new connection and a new wait at every retry; once it runs again, reads succeed.
func TestRedisReadsFailWhileTheServerHangs(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ctx := context.Background()
	s := openRedis(t, redisLocation(srv.URL(), "hang"))
	defer s.Close()
	if err := syscall.Kill(srv.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(srv.PID(), syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := s.Account(ctx, "acme"); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read from a stopped server succeeded")
		}
		t.Logf("read from a stopped server: %v after %v", err, time.Since(start).Round(time.Millisecond))
	case <-time.After(40 * time.Second):
		t.Fatal("a read from a stopped server has not answered in 40 s")
	}
	resume()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.Account(ctx, "acme")
		if err == nil || errors.Is(err, storage.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGCONT the read = %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
