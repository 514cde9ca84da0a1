package storage_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
	"github.com/mediagw/mediagw/storage/storetest"
)

// redisLocation is a store location of the Redis backend: the server's URL and a key prefix
// (and "#wait" after it for a store that waits for one replica).
func redisLocation(url, prefix string) string { return url + "#" + prefix }

func openRedis(t *testing.T, location string) *storage.Redis {
	t.Helper()
	url, rest, _ := strings.Cut(location, "#")
	prefix, wait, _ := strings.Cut(rest, "#")
	o := storage.RedisOptions{URL: url, KeyPrefix: prefix}
	if wait == "wait" {
		o.WaitReplicas, o.WaitTimeout = 1, 10*time.Second
	}
	s, err := storage.OpenRedis(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRedisConformance(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers (and for expiries): run beside the others
	var (
		once   sync.Once
		server *testredis.Server
		n      atomic.Int64
	)
	storetest.Run(t, storetest.Backend{
		// Only the parent process asks for locations, so only it starts a server; the crash
		// test's child opens the location it is given.
		NewLocation: func(*testing.T) string {
			once.Do(func() { server = testredis.Start(t, testredis.Options{}) })
			return redisLocation(server.URL(), fmt.Sprint("conformance-", n.Add(1)))
		},
		Open: func(t *testing.T, location string) storage.Store { return openRedis(t, location) },
	})
}

// The conformance suite again with wait_replicas 1 against a master with a replica: every
// operation keeps its contract when its writes wait for the replica.
func TestRedisConformanceWaitingForReplica(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers (and for expiries): run beside the others
	var (
		once   sync.Once
		master *testredis.Server
		n      atomic.Int64
	)
	storetest.Run(t, storetest.Backend{
		NewLocation: func(*testing.T) string {
			once.Do(func() { master, _ = replicated(t) })
			return redisLocation(master.URL(), fmt.Sprint("waiting-", n.Add(1))) + "#wait"
		},
		Open: func(t *testing.T, location string) storage.Store { return openRedis(t, location) },
	})
}
