package storage_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
	"github.com/mediagw/mediagw/storage/storetest"
)

// redisLocation is a store location of the Redis backend: the server's URL and a key prefix.
func redisLocation(url, prefix string) string { return url + "#" + prefix }

func openRedis(t *testing.T, location string) *storage.Redis {
	t.Helper()
	url, prefix, _ := strings.Cut(location, "#")
	s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: url, KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRedisConformance(t *testing.T) {
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
