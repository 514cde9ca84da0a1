package storage_test

import (
	"context"
	"errors"
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

// runConformance runs the conformance suite on Redis stores that share one deployment, which
// start starts when the first location is asked for and whose URL it returns (sub is the subtest
// that asked). Each location has its own key prefix, prefix and a number; a location of a store
// that waits for one replica ends in "#wait". Only the parent process asks for locations, so
// only it starts servers; the crash test's child opens the location it is given.
func runConformance(t *testing.T, prefix string, start func(sub *testing.T) (url string), wait bool) {
	var (
		once sync.Once
		url  string
		n    atomic.Int64
	)
	storetest.Run(t, storetest.Backend{
		NewLocation: func(sub *testing.T) string {
			once.Do(func() { url = start(sub) })
			location := redisLocation(url, fmt.Sprint(prefix, n.Add(1)))
			if wait {
				location += "#wait"
			}
			return location
		},
		Open: func(t *testing.T, location string) storage.Store { return openRedis(t, location) },
	})
}

func TestRedisConformance(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers (and for expiries): run beside the others
	runConformance(t, "conformance-", func(*testing.T) string { return testredis.Start(t, testredis.Options{}).URL() }, false)
}

// The conformance suite again with wait_replicas 1 against a master with a replica: every
// operation keeps its contract when its writes wait for the replica.
func TestRedisConformanceWaitingForReplica(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers (and for expiries): run beside the others
	runConformance(t, "waiting-", func(*testing.T) string {
		master, _ := testredis.StartReplicated(t)
		return master.URL()
	}, true)
}

// Two gateway processes (two clients of one server) hold against one balance at once: exactly
// the holds that fit succeed, however they interleave, and the ledger sums to the balance.
func TestRedisLedgerTwoProcesses(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t, "ledger-two")
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	const fit, racers = 40, 120
	if _, err := a.Credit(ctx, storage.Credit{Account: "team", Amount: fit * 250_000, IdempotencyKey: "c"}, now); err != nil {
		t.Fatal(err)
	}
	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range racers {
		store := a
		if i%2 == 1 {
			store = b
		}
		wg.Go(func() {
			_, _, err := store.Hold(ctx, storage.Hold{ID: fmt.Sprint("h", i), Account: "team", Amount: 250_000, Deadline: now}, now)
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, storage.ErrInsufficient):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won.Load() != fit {
		t.Fatalf("%d holds succeeded; want %d", won.Load(), fit)
	}
	bal, err := b.Balance(ctx, "team")
	if err != nil || bal.Amount != 0 || bal.Held != fit*250_000 {
		t.Fatalf("balance = %+v, %v", bal, err)
	}
}

// Two gateway processes credit one account with one Idempotency-Key at once, some with another
// amount (an operator's retry through a second instance, and a mistaken reuse of the key): one
// credit is made, every call answers its entry, and the ledger sums to the balance.
func TestRedisCreditOnceAcrossTwoProcesses(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t, "credit-two")
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	const racers = 60
	entries := make([]storage.LedgerEntry, racers)
	var wg sync.WaitGroup
	for i := range racers {
		store, amount := a, int64(7_000_000)
		if i%2 == 1 {
			store = b
		}
		if i%3 == 2 {
			amount = 8_000_000
		}
		wg.Go(func() {
			e, err := store.Credit(ctx, storage.Credit{Account: "team", Amount: amount, IdempotencyKey: "once", Note: "top-up"}, now)
			if err != nil {
				t.Error(err)
			}
			entries[i] = e
		})
	}
	wg.Wait()
	for i, e := range entries {
		if e.ID != entries[0].ID || e.Amount != entries[0].Amount {
			t.Fatalf("credit %d answered %+v, credit 0 %+v: want one entry for all", i, e, entries[0])
		}
	}
	page, _, err := b.LedgerPage(ctx, "team", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	bal, err := a.Balance(ctx, "team")
	if err != nil || len(page) != 1 || bal.Amount != entries[0].Amount || page[0].BalanceAfter != bal.Amount {
		t.Fatalf("ledger %+v, balance %+v (%v): want one credit of %d", page, bal, err, entries[0].Amount)
	}
}

// twoProcesses starts a redis-server and opens two stores on it under prefix, as two gateway
// processes do; both close when the test ends.
func twoProcesses(t *testing.T, prefix string) (a, b *storage.Redis) {
	server := testredis.Start(t, testredis.Options{})
	location := redisLocation(server.URL(), prefix)
	a, b = openRedis(t, location), openRedis(t, location)
	t.Cleanup(func() {
		if err := errors.Join(a.Close(), b.Close()); err != nil {
			t.Error(err)
		}
	})
	return a, b
}
