package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// TestInstancesOverTLSWithACLUser: two gateways reach a redis-server that speaks only TLS and
// requires client certificates (rediss://, tls_ca, tls_client_cert), as an ACL user that has
// only the documented minimum rules, with its password from {env.*}: a task created on A is
// queried and listed on B, and the password is in neither gateway's log.
func TestInstancesOverTLSWithACLUser(t *testing.T) {
	certs := testredis.NewTLS(t)
	srv := testredis.Start(t, testredis.Options{TLS: certs, Args: []string{"--tls-auth-clients", "yes"}})
	const password = "tls-acl-secret-pw"
	srv.AddUser(t, "gateway", password, "mg-", storage.RedisACLCommands)
	t.Setenv("MEDIAGW_TEST_REDIS_PASSWORD", password)
	c := startCluster(t, 2, clusterOptions{
		redisURL:       "rediss://gateway:{env.MEDIAGW_TEST_REDIS_PASSWORD}@" + srv.Addr,
		storageOptions: fmt.Sprintf("tls_ca %s\n\t\t\ttls_client_cert %s %s", certs.CAFile, certs.ClientCertFile, certs.ClientKeyFile),
	})
	a, b := c.instances[0], c.instances[1]
	id := createTask(t, a, "mg-alice", "")
	r := call(t, "GET", b.base+taskPath+"/"+id, "mg-alice", nil)
	if r.status != 200 || r.field("id") != id {
		t.Fatalf("query on B = %d %s", r.status, r.body)
	}
	r = call(t, "GET", b.base+taskPath+"?page_size=10", "mg-alice", nil)
	if r.status != 200 || r.json(t)["total"] != float64(1) {
		t.Fatalf("list on B = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", b.base+taskPath+"/"+id, "mg-bob", nil); r.status != 400 {
		t.Fatalf("bob reads alice's task on B: %d %s", r.status, r.body)
	}
	for _, in := range c.instances {
		log, err := os.ReadFile(in.proc.log)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(log), password) {
			t.Fatalf("%s logged the redis password", in.name)
		}
	}
}

// TestWrongRedisPasswordStopsStart: a gateway whose Redis password is wrong does not start; it
// says why (WRONGPASS, the URL without its password) and never prints the password.
func TestWrongRedisPasswordStopsStart(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t, testredis.Options{Password: "the-right-pw"})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "Caddyfile")
	caddyfile := fmt.Sprintf(`{
	admin off
	persist_config off
	mediagw {
		storage redis redis://:{env.MEDIAGW_TEST_REDIS_PASSWORD}@%s
	}
}

http://127.0.0.1:%d {
	respond ok
}
`, srv.Addr, freePort(t))
	if err := os.WriteFile(cfg, []byte(caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	const wrong = "a-wrong-redis-pw"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, caddyBinary(t), "run", "--config", cfg, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "MEDIAGW_TEST_REDIS_PASSWORD="+wrong, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("caddy run with a wrong redis password: %v (timed out: %v)\n%s", err, ctx.Err() != nil, out)
	}
	if !strings.Contains(string(out), "WRONGPASS") || !strings.Contains(string(out), "redis://:xxxxx@"+srv.Addr) {
		t.Fatalf("the start-up error does not say what is wrong:\n%s", out)
	}
	if strings.Contains(string(out), wrong) || strings.Contains(string(out), "the-right-pw") {
		t.Fatalf("the start-up output shows a password:\n%s", out)
	}
}

// TestInstancesThroughSentinelFailover: two gateways reach Redis through a sentinel; a task
// created on A before the master fails over to its replica (SENTINEL FAILOVER) is still there
// afterwards, and tasks created on B afterwards are read on A.
func TestInstancesThroughSentinelFailover(t *testing.T) {
	set := testredis.StartSentinel(t, testredis.SentinelSetOptions{MasterName: "gw", Password: "master-pw", SentinelPassword: "sentinel-pw"})
	t.Setenv("MEDIAGW_TEST_SENTINEL_PASSWORD", "sentinel-pw")
	c := startCluster(t, 2, clusterOptions{
		redisURL:       set.URL(),
		storageOptions: "sentinel_password {env.MEDIAGW_TEST_SENTINEL_PASSWORD}",
	})
	a, b := c.instances[0], c.instances[1]
	before := createTask(t, a, "mg-alice", "")
	// No acknowledged write is lost, and the old master takes no more writes.
	deadline := time.Now().Add(60 * time.Second)
	set.Failover(t, deadline)
	// B follows the sentinel to the new master: its creates succeed again (the first ones may
	// meet the switch).
	var after string
	for {
		r, err := send("POST", b.base+taskPath, "mg-alice", `{"model":"seedance-sim","content":[{"type":"text","text":"after"}]}`)
		if err == nil && r.status == 200 {
			after = r.field("id")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no create succeeded on B after the failover: %d %s %v", r.status, r.body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A reads both, once it follows the sentinel too (it may read the old master, now a
	// replica, for a moment).
	for _, id := range []string{before, after} {
		for {
			r, err := send("GET", a.base+taskPath+"/"+id, "mg-alice", nil)
			if err == nil && r.status == 200 && r.field("id") == id {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s on A after the failover = %d %s %v", id, r.status, r.body, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestInstanceWaitsForReplica: a gateway with `wait_replicas 1` against a master with one
// replica. While the replica follows, creates succeed; when it stops (REPLICAOF NO ONE), a create
// answers 500 in the task API's shape and leaves no task behind (the record is taken back), and a
// create with an Idempotency-Key fails without keeping the key, so the same key succeeds once
// the replica follows again.
func TestInstanceWaitsForReplica(t *testing.T) {
	t.Parallel()
	master, replica := testredis.StartReplicated(t)
	c := startCluster(t, 1, clusterOptions{redisURL: master.URL(), storageOptions: "wait_replicas 1\n\t\t\twait_timeout 2s"})
	a := c.instances[0]
	total := func() float64 {
		t.Helper()
		r := call(t, "GET", a.base+taskPath+"?page_size=10", "mg-alice", nil)
		if r.status != 200 {
			t.Fatalf("list = %d %s", r.status, r.body)
		}
		return r.json(t)["total"].(float64)
	}
	createTask(t, a, "mg-alice", "")

	if err := replica.Do("REPLICAOF", "NO", "ONE").Error(); err != nil {
		t.Fatal(err)
	}
	r := call(t, "POST", a.base+taskPath, "mg-alice", `{"model":"seedance-sim","content":[{"type":"text","text":"no replica"}]}`)
	if r.status != 500 || r.field("code") == "" || r.field("message") == "" || !strings.Contains(string(r.body), `"data":null`) {
		t.Fatalf("create without a replica = %d %s, want 500 in the task API's shape", r.status, r.body)
	}
	if n := total(); n != 1 {
		t.Fatalf("a create that failed for want of a replica left a task: %v tasks listed", n)
	}
	withKey := func() response {
		t.Helper()
		req, err := http.NewRequest("POST", a.base+taskPath, strings.NewReader(`{"model":"seedance-sim","content":[{"type":"text","text":"keyed"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer mg-alice")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "durable-1")
		return do(t, req)
	}
	if r := withKey(); r.status != 500 {
		t.Fatalf("keyed create without a replica = %d %s", r.status, r.body)
	}

	replica.Follow(t, master)
	r = withKey()
	if r.status != 200 || r.field("id") == "" {
		t.Fatalf("the retry with the same Idempotency-Key once the replica follows = %d %s", r.status, r.body)
	}
	if again := withKey(); again.status != 200 || again.field("id") != r.field("id") {
		t.Fatalf("a second retry = %d %s, want the stored answer %s", again.status, again.body, r.body)
	}
	if n := total(); n != 2 {
		t.Fatalf("%v tasks listed, want 2", n)
	}
	if v, err := replica.Do("EXISTS", "{"+strings.ToLower("mg-"+t.Name())+"}:t:"+r.field("id")).AsInt64(); err != nil || v != 1 {
		t.Fatalf("the acknowledged task is not on the replica: %d %v", v, err)
	}
}
