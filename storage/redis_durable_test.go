package storage_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// replicated starts a master and one replica of it, and waits until the replica has caught up.
func replicated(t testing.TB) (master, replica *testredis.Server) {
	t.Helper()
	// The master starts a full sync at once, not after waiting 5 s for more replicas.
	master = testredis.Start(t, testredis.Options{Args: []string{"--repl-diskless-sync-delay", "0"}})
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	replica = testredis.Start(t, testredis.Options{Args: []string{"--replicaof", host, port}})
	follow(t, master, replica)
	return master, replica
}

// follow makes replica replicate master again and waits until master counts it (WAIT 1 answers 1).
func follow(t testing.TB, master, replica *testredis.Server) {
	t.Helper()
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := replica.Do("REPLICAOF", host, port).Error(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, err := master.Do("WAIT", "1", "200").AsInt64(); err == nil && n >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica never caught up with the master")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With wait_replicas 1, a durable write returns only once the replica has it; when the replica
// stops replicating, the write fails with ErrNotReplicated after wait_timeout and is taken back
// on the master, so that nothing is acknowledged that a failover could lose. The store runs as
// an ACL user with exactly storage.RedisACLCommands, so WAIT and ROLE must be among them.
func TestRedisWaitReplicas(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers (and for expiries): run beside the others
	master, replica := replicated(t)
	master.AddUser(t, "gw", "gw-pass", "dur", storage.RedisACLCommands)
	ctx := context.Background()
	// Two stores on the same keys: one that waits long enough for a replica on a loaded
	// machine, one that gives up soon once the replica is cut off.
	open := func(timeout time.Duration) *storage.Redis {
		t.Helper()
		s, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: "redis://gw:gw-pass@" + master.Addr, KeyPrefix: "dur",
			WaitReplicas: 1, WaitTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	const timeout = 300 * time.Millisecond
	s, cut := open(20*time.Second), open(timeout)

	// Healthy replica: every acknowledged write is on the replica when the call returns.
	onReplica := func(key, field string) string {
		t.Helper()
		v, err := replica.Do("HGET", key, field).ToString()
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return v
	}
	task := storage.Task{ID: "cgt-dur-1", Kind: storage.KindVideo, Account: "alice", Status: "queued", CreatedAt: time.Now().Unix(),
		ExpiresAt: time.Now().Add(time.Hour).Unix()}
	created, err := s.CreateTask(ctx, task)
	if err != nil {
		t.Fatalf("create with a healthy replica: %v", err)
	}
	if v := onReplica("{dur}:t:cgt-dur-1", "v"); v != "1" {
		t.Fatalf("the create returned before the replica had the record: version on the replica %s", v)
	}
	created.Status = "running"
	running, err := s.ReplaceTask(ctx, created)
	if err != nil {
		t.Fatalf("update with a healthy replica: %v", err)
	}
	if v := onReplica("{dur}:t:cgt-dur-1", "v"); v != "2" {
		t.Fatalf("the update returned before the replica had it: version on the replica %s", v)
	}
	if _, ok, err := s.AddCounter(ctx, "quota/k1", 5, 100); err != nil || !ok {
		t.Fatalf("charge with a healthy replica: %v %v", ok, err)
	}
	if v, err := replica.Do("GET", "{dur}:c:quota/k1").ToString(); err != nil || v != "5" {
		t.Fatalf("the charge returned before the replica had it: %q %v", v, err)
	}

	// The replica stops replicating: durable writes fail, and what they wrote is taken back.
	if err := replica.Do("REPLICAOF", "NO", "ONE").Error(); err != nil {
		t.Fatal(err)
	}
	notReplicated := func(what string, err error, start time.Time) {
		t.Helper()
		if !errors.Is(err, storage.ErrNotReplicated) || !strings.Contains(err.Error(), "0 of 1 replicas") {
			t.Fatalf("%s without a replica: %v, want ErrNotReplicated naming 0 of 1 replicas", what, err)
		}
		if took := time.Since(start); took < timeout || took > timeout+20*time.Second {
			t.Fatalf("%s failed after %s: not after waiting wait_timeout (%s)", what, took, timeout)
		}
	}
	start := time.Now()
	_, err = cut.CreateTask(ctx, storage.Task{ID: "cgt-dur-2", Kind: storage.KindVideo, Account: "alice", Status: "queued",
		CreatedAt: time.Now().Unix(), ExpiresAt: time.Now().Add(time.Hour).Unix()})
	notReplicated("create", err, start)
	if _, err := s.Task(ctx, "cgt-dur-2"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the unconfirmed create left a record on the master: %v", err)
	}

	done := running
	done.Status = "succeeded"
	start = time.Now()
	_, err = cut.ReplaceTask(ctx, done)
	notReplicated("update", err, start)
	cur, err := s.Task(ctx, "cgt-dur-1")
	if err != nil || cur.Status != "running" || cur.Version != 4 {
		t.Fatalf("after an unconfirmed update the record is %+v, %v; want the running record back, as version 4", cur, err)
	}
	unfinished := false
	if err := s.UnfinishedTasks(ctx, func(id string) bool { unfinished = unfinished || id == "cgt-dur-1"; return true }); err != nil {
		t.Fatal(err)
	}
	if !unfinished {
		t.Fatal("the task restored after an unconfirmed update is not among the unfinished tasks")
	}

	start = time.Now()
	_, _, err = cut.AddCounter(ctx, "quota/k1", 7, 100)
	notReplicated("charge", err, start)
	if v, err := s.Counter(ctx, "quota/k1"); err != nil || v != 5 {
		t.Fatalf("after an unconfirmed charge the counter is %d, %v; want 5", v, err)
	}
	// A caller that leaves while the WAIT blocks does not turn a charge that ran into one that
	// failed without a trace: it is still waited for and taken back.
	leaving, leave := context.WithTimeout(ctx, timeout/4)
	start = time.Now()
	_, _, err = cut.AddCounter(leaving, "quota/k1", 9, 100)
	leave()
	notReplicated("charge by a caller that left", err, start)
	if v, err := s.Counter(ctx, "quota/k1"); err != nil || v != 5 {
		t.Fatalf("after an unconfirmed charge whose caller left the counter is %d, %v; want 5", v, err)
	}
	// A setting stored without confirmation stays, and is not handed out unconfirmed by the next
	// call either (a failover could still replace it with another one).
	for _, val := range []string{"first", "second"} {
		start = time.Now()
		got, err := cut.SettingOnce(ctx, "secret-dur", []byte(val))
		if err == nil {
			t.Fatalf("setting %q without a replica answered %q, confirmed by nobody", val, got)
		}
		notReplicated("setting "+val, err, start)
	}
	// A refund is kept: taking it back would lose it for certain.
	if v, ok, err := cut.AddCounter(ctx, "quota/k1", -2, -1); err != nil || !ok || v != 3 {
		t.Fatalf("an unconfirmed refund = %d %v %v, want 3, kept", v, ok, err)
	}

	rec := storage.IdempotencyRecord{Owner: "owner-1", InFlight: true, RequestHash: "h"}
	start = time.Now()
	_, _, err = cut.BeginIdempotent(ctx, "acct/key-1", rec, time.Minute)
	notReplicated("idempotency key", err, start)

	start = time.Now()
	_, err = cut.EnqueueEvent(ctx, storage.Event{ID: "ev-1", TaskID: "cgt-dur-1", URL: "https://example.com/cb"})
	notReplicated("callback", err, start)

	// Reservations do not wait: the durable write that follows them does.
	if _, ok, err := cut.ReserveCounter(ctx, "active/k1", 1, 10); err != nil || !ok {
		t.Fatalf("a reservation waited for replicas: %v %v", ok, err)
	}

	// Replication back: the same writes succeed, the idempotency key is free again.
	follow(t, master, replica)
	if _, claimed, err := s.BeginIdempotent(ctx, "acct/key-1", rec, time.Minute); err != nil || !claimed {
		t.Fatalf("the idempotency key of an unconfirmed begin is not free: %v %v", claimed, err)
	}
	if _, err := s.ReplaceTask(ctx, func() storage.Task { cur.Status = "succeeded"; return cur }()); err != nil {
		t.Fatalf("update after replication is back: %v", err)
	}
	if v := onReplica("{dur}:t:cgt-dur-1", "v"); v != "5" {
		t.Fatalf("version on the replica %s, want 5", v)
	}
}

// On start, the store warns when the server has replicas but writes do not wait for them (a
// failover can lose acknowledged writes), and when fewer replicas are connected than
// wait_replicas.
func TestRedisReplicationWarning(t *testing.T) {
	master, _ := replicated(t)
	for _, tc := range []struct {
		wait int
		want string
	}{
		{0, "failover to a replica can lose acknowledged"},
		{2, "fewer replicas are connected than wait_replicas"},
		{1, ""},
	} {
		core, logs := observer.New(zap.WarnLevel)
		s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: master.URL(), Logger: zap.New(core), WaitReplicas: tc.wait})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		var found []string
		for _, e := range logs.All() {
			if strings.Contains(e.Message, "replica") {
				found = append(found, e.Message)
			}
		}
		if tc.want == "" && len(found) > 0 || tc.want != "" && (len(found) != 1 || !strings.Contains(found[0], tc.want)) {
			t.Errorf("wait_replicas %d: replication warnings %q, want %q", tc.wait, found, tc.want)
		}
	}
}

// The minimum ACL of docs/instances.md is storage.RedisACLCommands, so that operators grant
// what the gateway runs.
func TestRedisACLCommandsInDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/instances.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "ACL SETUSER mediagw ") {
			if !strings.HasSuffix(line, " "+storage.RedisACLCommands) {
				t.Fatalf("the ACL line of docs/instances.md\n%s\ndoes not end with storage.RedisACLCommands\n%s", line, storage.RedisACLCommands)
			}
			return
		}
	}
	t.Fatal("docs/instances.md has no line ACL SETUSER mediagw …")
}

// In a Cluster with a replica per master, wait_replicas 1 works, and the WAIT goes with the
// write to the master of the gateway's slot: once that master's replica is stopped, writes fail
// (a WAIT sent to another master, whose replica still runs, would let them through).
func TestRedisClusterWaitReplicas(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers (and for expiries): run beside the others
	cluster := testredis.StartCluster(t, 3, true)
	open := func(timeout time.Duration) *storage.Redis {
		t.Helper()
		s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: cluster.URL(), KeyPrefix: "cwait",
			WaitReplicas: 1, WaitTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s, cut := open(20*time.Second), open(500*time.Millisecond)
	roundTrip(t, s, "cgt-cluster-wait")
	owner := -1
	for i, node := range cluster.Nodes {
		if n, err := node.Do("EXISTS", "{cwait}:t:cgt-cluster-wait").AsInt64(); err == nil && n == 1 {
			owner = i
		}
	}
	if owner < 0 {
		t.Fatal("no master holds the task")
	}
	cluster.Replicas[owner].Stop()
	_, err := cut.CreateTask(context.Background(), storage.Task{ID: "cgt-cluster-wait-2", Kind: storage.KindVideo, Account: "alice",
		Status: "queued", CreatedAt: time.Now().Unix()})
	if !errors.Is(err, storage.ErrNotReplicated) {
		t.Fatalf("create with the slot's replica stopped: %v, want ErrNotReplicated", err)
	}
}
