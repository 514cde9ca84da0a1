package storage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
	"github.com/mediagw/mediagw/storage/storetest"
)

// The connection modes of the Redis store beyond plain redis:// on loopback: TLS, an ACL user
// limited to the gateway's keys, Sentinel and Cluster, each against real redis-server processes.

// roundTrip creates a task, reads it back through the cache-free path, creates a key and finds
// it through the client-side cache, and charges a counter: one of each kind of operation.
func roundTrip(t *testing.T, s storage.Store, id string) {
	t.Helper()
	ctx := context.Background()
	task := storage.Task{ID: id, Kind: storage.KindVideo, Account: "alice", Status: "queued", CreatedAt: time.Now().Unix()}
	if _, err := s.CreateTask(ctx, task); err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	if got, err := s.Task(ctx, id); err != nil || got.Account != "alice" {
		t.Fatalf("task %s = %+v, %v", id, got, err)
	}
	hash := storage.HashSecret("mg-" + id)
	if _, err := s.CreateKey(ctx, storage.APIKey{ID: "key_" + id, Hash: hash, Account: "alice"}); err != nil {
		t.Fatalf("create key: %v", err)
	}
	if k, err := s.KeyByHash(ctx, hash); err != nil || k.ID != "key_"+id {
		t.Fatalf("key by hash = %+v, %v", k, err)
	}
	if v, ok, err := s.AddCounter(ctx, "quota/"+id, 3, 10); err != nil || !ok || v != 3 {
		t.Fatalf("counter = %d, %v, %v", v, ok, err)
	}
}

// rediss:// with a private CA given as TLS settings: the connection works, and the server's
// certificate is checked (the system's CAs do not trust it).
func TestRedisTLS(t *testing.T) {
	certs := testredis.NewTLS(t)
	srv := testredis.Start(t, testredis.Options{TLS: certs})
	if !strings.HasPrefix(srv.URL(), "rediss://") {
		t.Fatalf("URL %q", srv.URL())
	}
	ctx := context.Background()
	s, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: srv.URL(), KeyPrefix: "tls", TLS: certs.ClientConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	roundTrip(t, s, "cgt-tls")

	if _, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: srv.URL(), KeyPrefix: "tls"}); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a server certificate of an unknown CA was accepted: %v", err)
	}
	plain := strings.Replace(srv.URL(), "rediss://", "redis://", 1)
	if _, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: plain, TLS: certs.ClientConfig()}); err == nil ||
		!strings.Contains(err.Error(), "rediss://") {
		t.Fatalf("TLS settings with a redis:// URL: %v", err)
	}
}

// unix:// reaches a server on its Unix socket, with a password and a database number.
func TestRedisUnixSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	srv := testredis.Start(t, testredis.Options{Password: "unix-pw", Args: []string{"--unixsocket", sock, "--unixsocketperm", "700"}})
	s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: "unix://:unix-pw@" + sock + "?db=3", KeyPrefix: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	roundTrip(t, s, "cgt-unix")
	// The records went to database 3, not 0.
	if info, err := srv.Do("INFO", "keyspace").ToString(); err != nil || !strings.Contains(info, "db3:keys=") || strings.Contains(info, "db0:") {
		t.Fatalf("INFO keyspace = %q, %v", info, err)
	}
}

// sharedTB lets a subtest start a server that the whole test keeps: a failure is the subtest's,
// the cleanup and the temporary directory are the parent's.
type sharedTB struct {
	*testing.T // the subtest
	parent     *testing.T
}

func (s sharedTB) Cleanup(f func()) { s.parent.Cleanup(f) }
func (s sharedTB) TempDir() string  { return s.parent.TempDir() }

// An ACL user limited to the gateway's key prefix and the commands in storage.RedisACLCommands runs the
// whole conformance suite.
func TestRedisACLUser(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers (and for expiries): run beside the others
	var (
		once   sync.Once
		server *testredis.Server
		n      atomic.Int64
	)
	storetest.Run(t, storetest.Backend{
		NewLocation: func(sub *testing.T) string {
			once.Do(func() {
				server = testredis.Start(sharedTB{sub, t}, testredis.Options{})
				server.AddUser(sub, "gw", "gw-pass", "acl-", storage.RedisACLCommands)
			})
			return redisLocation("redis://gw:gw-pass@"+server.Addr, fmt.Sprint("acl-", n.Add(1)))
		},
		Open: func(t *testing.T, location string) storage.Store { return openRedis(t, location) },
	})
}

// The same ACL user cannot write a prefix outside its key pattern; a wrong password is a clear
// start-up error that does not show the password.
func TestRedisACLUserRefused(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	srv.AddUser(t, "gw", "gw-pass", "acl-", storage.RedisACLCommands)
	ctx := context.Background()
	other, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: "redis://gw:gw-pass@" + srv.Addr, KeyPrefix: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.CreateTask(ctx, storage.Task{ID: "cgt-1", Kind: storage.KindVideo, Account: "a", CreatedAt: 1}); err == nil ||
		!strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("a key outside the user's pattern was written: %v", err)
	}
	_, err = storage.OpenRedis(ctx, storage.RedisOptions{URL: "redis://gw:not-the-gw-pass@" + srv.Addr, KeyPrefix: "acl-x"})
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), "not-the-gw-pass") || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("wrong password error: %v", err)
	}
}

// Through Sentinel (?master_set=), with a password on the master and another on the sentinel:
// the store finds the master and follows a failover. Without the sentinel's password it does not
// start, and says so without showing a password.
func TestRedisSentinel(t *testing.T) {
	t.Parallel() // mostly waiting for servers: run beside the other failover tests
	set := testredis.StartSentinel(t, testredis.SentinelSetOptions{MasterName: "gwmaster", Password: "master-pw", SentinelPassword: "sentinel-pw"})
	ctx := context.Background()
	_, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: set.URL(), KeyPrefix: "sentinel", SentinelPassword: "not-sentinel-pw"})
	if err == nil || strings.Contains(err.Error(), "master-pw") || strings.Contains(err.Error(), "not-sentinel-pw") {
		t.Fatalf("a wrong sentinel password: %v", err)
	}
	t.Logf("a wrong sentinel password: %v", err)
	sentinelFailover(t, set, storage.RedisOptions{URL: set.URL(), KeyPrefix: "sentinel", SentinelPassword: "sentinel-pw"})
}

// rediss:// through Sentinel: the sentinel, the master and the replica speak only TLS, and the
// store reaches all of them with the TLS settings it is given.
func TestRedisSentinelTLS(t *testing.T) {
	t.Parallel() // mostly waiting for servers: run beside the other failover tests
	certs := testredis.NewTLS(t)
	set := testredis.StartSentinel(t, testredis.SentinelSetOptions{MasterName: "gwmaster", TLS: certs})
	if !strings.HasPrefix(set.URL(), "rediss://") {
		t.Fatalf("URL %q", set.URL())
	}
	sentinelFailover(t, set, storage.RedisOptions{URL: set.URL(), KeyPrefix: "sentinel-tls", TLS: certs.ClientConfig()})
}

// sentinelFailover opens the store through the sentinel, writes, fails the master over to the
// replica (SENTINEL FAILOVER), and checks that writes continue on the new master and that the
// earlier ones are there.
func sentinelFailover(t *testing.T, set *testredis.Sentinel, o storage.RedisOptions) {
	t.Helper()
	ctx := context.Background()
	s, err := storage.OpenRedis(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	roundTrip(t, s, "cgt-before")
	// No acknowledged write is lost, and the old master takes no more writes.
	deadline := time.Now().Add(60 * time.Second)
	set.Failover(t, deadline)
	writesResumeAfterFailover(t, s, deadline)
	// The new master holds what was written after the failover.
	if n, err := set.Replica.Do("EXISTS", "{"+o.KeyPrefix+"}:t:cgt-after").AsInt64(); err != nil || n != 1 {
		t.Fatalf("the new master lacks the task written after the failover: %d, %v", n, err)
	}
}

// A Cluster of three masters runs the whole conformance suite, as an ACL user with
// storage.RedisACLCommands and the two cluster commands docs/instances.md adds for a Cluster: every key
// of one prefix is in one hash slot, so each atomic script runs on one node.
func TestRedisClusterConformance(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers (and for expiries): run beside the others
	var (
		once    sync.Once
		cluster *testredis.Cluster
		n       atomic.Int64
	)
	storetest.Run(t, storetest.Backend{
		NewLocation: func(sub *testing.T) string {
			once.Do(func() {
				cluster = testredis.StartCluster(sharedTB{sub, t}, 3, false)
				for _, node := range cluster.Nodes {
					node.AddUser(sub, "gw", "gw-pass", "cluster-", storage.RedisACLCommands, "+cluster|slots", "+cluster|shards")
				}
			})
			url := strings.Replace(cluster.URL(), "redis://", "redis://gw:gw-pass@", 1)
			return redisLocation(url, fmt.Sprint("cluster-", n.Add(1)))
		},
		Open: func(t *testing.T, location string) storage.Store { return openRedis(t, location) },
	})
	if cluster == nil {
		return // the crash test's child process
	}
	// The prefixes' slots are spread over the masters: the suite really ran on several nodes.
	used := 0
	for _, node := range cluster.Nodes {
		keys, err := node.Do("DBSIZE").AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if keys > 0 {
			used++
		}
	}
	if used < 2 {
		t.Fatalf("the suite's keys are on %d of %d nodes", used, len(cluster.Nodes))
	}
}

// A Cluster master fails over to its replica (CLUSTER FAILOVER on the replica, which waits until
// it has every write): the store follows the slot to the new master, keeps writing, and reads
// what it wrote before.
func TestRedisClusterFailover(t *testing.T) {
	t.Parallel() // mostly waiting for servers: run beside the other failover tests
	cluster := testredis.StartCluster(t, 1, true)
	master, replica := cluster.Nodes[0], cluster.Replicas[0]
	ctx := context.Background()
	// The persistence check reads every master and names the one that can lose writes.
	if err := master.Do("CONFIG", "SET", "appendfsync", "everysec").Error(); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	s, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: cluster.URL(), KeyPrefix: "failover", Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	warned := map[string]bool{}
	for _, entry := range logs.FilterMessageSnippet("appendfsync always").All() {
		warned[entry.ContextMap()["redis_node"].(string)] = true
	}
	if !warned[master.Addr] || len(warned) != 1 {
		t.Fatalf("persistence warnings for %v; want the master %s", warned, master.Addr)
	}
	roundTrip(t, s, "cgt-before")
	if err := replica.Do("CLUSTER", "FAILOVER").Error(); err != nil {
		t.Fatalf("CLUSTER FAILOVER: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	replica.WaitRole(t, "master", deadline)
	writesResumeAfterFailover(t, s, deadline)
	master.WaitRole(t, "slave", deadline)
}

// writesResumeAfterFailover waits (until deadline) for a write to succeed once the client follows
// the new master, checks a round trip there, and that cgt-before, written before the failover
// by roundTrip, was not lost.
func writesResumeAfterFailover(t *testing.T, s *storage.Redis, deadline time.Time) {
	t.Helper()
	ctx := context.Background()
	for i := 0; ; i++ {
		_, err := s.CreateTask(ctx, storage.Task{ID: fmt.Sprint("cgt-after-", i), Kind: storage.KindVideo, Account: "alice", CreatedAt: 1})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	roundTrip(t, s, "cgt-after")
	if got, err := s.Task(ctx, "cgt-before"); err != nil || got.Account != "alice" {
		t.Fatalf("task written before the failover = %+v, %v", got, err)
	}
}
