package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// Key lookups are served from the client-side cache: a thousand lookups of one key cost the
// server (almost) nothing, and a revoke through another client is seen within a second.
func TestRedisKeyLookupCachedAndRevokedAcrossProcesses(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ctx := context.Background()
	loc := redisLocation(srv.URL(), "revoke")
	a, b := openRedis(t, loc), openRedis(t, loc)
	defer a.Close()
	defer b.Close()
	hash := storage.HashSecret("mg-revoke")
	created, err := b.CreateKey(ctx, storage.APIKey{ID: "key_r", Hash: hash, Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.KeyByHash(ctx, hash); err != nil {
		t.Fatal(err)
	}
	before := srv.CommandCalls(t, "hmget")
	for range 1000 {
		k, err := a.KeyByHash(ctx, hash)
		if err != nil || k.Disabled {
			t.Fatalf("lookup = %+v, %v", k, err)
		}
	}
	// Allow a refill or two (the cache keeps a record at most a second).
	if calls := srv.CommandCalls(t, "hmget") - before; calls > 5 {
		t.Fatalf("1000 cached lookups reached the server %d times", calls)
	}

	created.Disabled = true
	revokedAt := time.Now()
	if _, err := b.UpdateKey(ctx, created); err != nil {
		t.Fatal(err)
	}
	// The writer sees it at once.
	if k, err := b.KeyByHash(ctx, hash); err != nil || !k.Disabled {
		t.Fatalf("writer's lookup after revoke = %+v, %v", k, err)
	}
	for {
		// A lookup begun more than MaxDirectoryStaleness after the revoke must see it (on a
		// loaded machine the lookup itself may take a while).
		asked := time.Now()
		k, err := a.KeyByHash(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		if k.Disabled {
			break
		}
		if asked.Sub(revokedAt) > storage.MaxDirectoryStaleness {
			t.Fatalf("another client still sees the key enabled in a lookup begun %v after the revoke", asked.Sub(revokedAt))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := b.DeleteKey(ctx, "key_r"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(storage.MaxDirectoryStaleness)
	for {
		_, err := a.KeyByHash(ctx, hash)
		if errors.Is(err, storage.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleted key still found by another client: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A task acknowledged by CreateTask survives a crash (SIGKILL) of redis-server with AOF and
// appendfsync always.
func TestRedisTaskSurvivesServerCrash(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ctx := context.Background()
	loc := redisLocation(srv.URL(), "crash")
	s := openRedis(t, loc)
	for i := range 50 {
		task := storage.Task{ID: fmt.Sprint("cgt-", i), Kind: storage.KindVideo, Account: "alice", Status: "queued", CreatedAt: time.Now().Unix()}
		if _, err := s.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.AddCounter(ctx, "quota/k", 50, 100); err != nil {
		t.Fatal(err)
	}
	s.Close()
	srv.Restart(true)
	s = openRedis(t, loc)
	defer s.Close()
	for i := range 50 {
		if got, err := s.Task(ctx, fmt.Sprint("cgt-", i)); err != nil || got.Account != "alice" {
			t.Fatalf("task %d after the server's crash: %+v, %v", i, got, err)
		}
	}
	if v, err := s.Counter(ctx, "quota/k"); err != nil || v != 50 {
		t.Fatalf("counter after the server's crash = %d, %v", v, err)
	}
	n := 0
	if err := s.UnfinishedTasks(ctx, func(string) bool { n++; return true }); err != nil || n != 50 {
		t.Fatalf("unfinished after the crash = %d, %v", n, err)
	}
}

// The store warns when the server's persistence can lose acknowledged writes, and not when it
// cannot.
func TestRedisPersistenceWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts testredis.Options
		warn bool
	}{
		{"aof always", testredis.Options{}, false},
		{"aof everysec", testredis.Options{Fsync: "everysec"}, true},
		{"no aof", testredis.Options{NoAOF: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testredis.Start(t, tc.opts)
			core, logs := observer.New(zap.WarnLevel)
			s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: srv.URL(), Logger: zap.New(core)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			warned := logs.FilterMessageSnippet("appendfsync always").Len() > 0
			if warned != tc.warn {
				t.Fatalf("warned = %v, want %v (%v)", warned, tc.warn, logs.All())
			}
		})
	}
}

// Passwords never appear in errors.
func TestRedisURLSecretsRedacted(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{Password: "right-pass"})
	_, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: "redis://:wrong-pass@" + srv.Addr})
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), "wrong-pass") {
		t.Fatalf("error shows the password: %v", err)
	}
	s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := storage.RedactURL("rediss://user:pw@host:6380/0"); got != "rediss://user:xxxxx@host:6380/0" {
		t.Fatalf("RedactURL = %q", got)
	}
}

// Two key prefixes on one server are two separate stores.
func TestRedisKeyPrefixSeparatesGateways(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ctx := context.Background()
	one, two := openRedis(t, redisLocation(srv.URL(), "one")), openRedis(t, redisLocation(srv.URL(), "two"))
	defer one.Close()
	defer two.Close()
	if _, err := one.CreateTask(ctx, storage.Task{ID: "cgt-1", Kind: storage.KindVideo, Account: "a", CreatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := two.Task(ctx, "cgt-1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the other prefix sees the task: %v", err)
	}
	if _, err := two.CreateTask(ctx, storage.Task{ID: "cgt-1", Kind: storage.KindVideo, Account: "b", CreatedAt: 1}); err != nil {
		t.Fatalf("the other prefix cannot create the same id: %v", err)
	}
}
