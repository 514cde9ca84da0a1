package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
)

// Several gateway instances (caddy subprocesses) on one redis-server behave as one gateway.

const instanceCaddyfile = `{
	admin 127.0.0.1:%[1]d
	persist_config off
	mediagw {
		storage redis %[2]s {
			key_prefix %[3]s
			%[7]s
		}
		%[8]s
		provider sim {
			base_url http://127.0.0.1:%[4]d/api/v3
			api_key sim-key
			models seedance-sim
			cost 1
		}
		key mg-alice {
			account alice
		}
		key mg-bob {
			account bob
		}
		key mg-quota {
			account quota
			quota 100
		}
		key mg-rate {
			account rate
			rate 10 1m
		}
		watcher {
			interval %[5]s
		}
		callbacks {
			allow_private
			retry_schedule 300ms 300ms 300ms 300ms 300ms 300ms 300ms 300ms 300ms 300ms
			%[9]s
		}
	}
}

http://127.0.0.1:%[6]d {
	route {
		mediagw_auth
		mediagw_models /v1/models
		mediagw_presign /v1/upload/presign
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

const instanceSimulatorCaddyfile = `{
	admin off
	persist_config off
}

http://127.0.0.1:%d {
	mediagw_simulator {
		queued_for %s
		running_for %s
		api_key sim-key
	}
}
`

// instance is one gateway process.
type instance struct {
	name  string
	base  string // http://127.0.0.1:port
	admin string // host:port of its admin API
	proc  *caddyProcess
}

// cluster is N gateways sharing one redis-server and one simulator.
type cluster struct {
	redis     *testredis.Server
	instances []*instance
	// launch starts one more instance of the cluster.
	launch func(t *testing.T) *instance
}

// clusterOptions shape a cluster.
type clusterOptions struct {
	// queuedFor and runningFor are the simulator's task phases (default 1h: tasks never finish).
	queuedFor, runningFor string
	// watchInterval is the watcher's interval (default 1s).
	watchInterval string
	// redisURL, when set, is the URL the instances connect to, and no redis-server is started
	// for them (cluster.redis is nil).
	redisURL string
	// storageOptions are more lines of the storage redis block (tls_ca …).
	storageOptions string
	// gatewayOptions are more lines of the mediagw block (refund_unsuccessful_tasks …).
	gatewayOptions string
	// callbackOptions are more lines of the callbacks block (attempt_timeout …).
	callbackOptions string
}

func startCluster(t *testing.T, n int, o clusterOptions) *cluster {
	t.Helper()
	if o.queuedFor == "" {
		o.queuedFor = "1h"
	}
	if o.runningFor == "" {
		o.runningFor = "1h"
	}
	if o.watchInterval == "" {
		o.watchInterval = "1s"
	}
	c := &cluster{}
	redisURL := o.redisURL
	if redisURL == "" {
		c.redis = testredis.Start(t, testredis.Options{})
		redisURL = c.redis.URL()
	}
	simPort := freePort(t)
	startCaddyProcess(t, fmt.Sprintf(instanceSimulatorCaddyfile, simPort, o.queuedFor, o.runningFor), fmt.Sprintf("http://127.0.0.1:%d/", simPort))
	prefix := "mg-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	c.launch = func(t *testing.T) *instance {
		t.Helper()
		adminPort, port := freePort(t), freePort(t)
		cfg := fmt.Sprintf(instanceCaddyfile, adminPort, redisURL, prefix, simPort, o.watchInterval, port, o.storageOptions, o.gatewayOptions, o.callbackOptions)
		in := &instance{
			name:  string(rune('A' + len(c.instances))),
			base:  fmt.Sprintf("http://127.0.0.1:%d", port),
			admin: fmt.Sprintf("127.0.0.1:%d", adminPort),
		}
		in.proc = startCaddyProcess(t, cfg, in.base+"/")
		c.instances = append(c.instances, in)
		return in
	}
	for range n {
		c.launch(t)
	}
	return c
}

const taskPath = "/api/v3/contents/generations/tasks"

func createTask(t *testing.T, in *instance, key, extra string) string {
	t.Helper()
	r := call(t, "POST", in.base+taskPath, key,
		fmt.Sprintf(`{"model":"seedance-sim","content":[{"type":"text","text":"cluster"}]%s}`, extra))
	id := r.field("id")
	if r.status != 200 || id == "" {
		t.Fatalf("create on %s = %d %s", in.name, r.status, r.body)
	}
	return id
}

// TestInstancesShareTasks: create on A, query on B, list on C, cancel on B; another account sees
// nothing anywhere.
func TestInstancesShareTasks(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{})
	a, b, cc := c.instances[0], c.instances[1], c.instances[2]
	id := createTask(t, a, "mg-alice", "")

	r := call(t, "GET", b.base+taskPath+"/"+id, "mg-alice", nil)
	if r.status != 200 || r.json(t)["id"] != id || r.json(t)["status"] != "queued" {
		t.Fatalf("query on B = %d %s", r.status, r.body)
	}
	r = call(t, "GET", cc.base+taskPath+"?page_size=10", "mg-alice", nil)
	if r.status != 200 || r.json(t)["total"] != float64(1) || !strings.Contains(string(r.body), id) {
		t.Fatalf("list on C = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", cc.base+taskPath+"/"+id, "mg-bob", nil); r.status != 400 {
		t.Fatalf("bob reads alice's task on C: %d %s", r.status, r.body)
	}
	if r := call(t, "DELETE", b.base+taskPath+"/"+id, "mg-bob", nil); r.status != 400 {
		t.Fatalf("bob cancels alice's task on B: %d %s", r.status, r.body)
	}
	if r := call(t, "DELETE", b.base+taskPath+"/"+id, "mg-alice", nil); r.status != 200 {
		t.Fatalf("cancel on B = %d %s", r.status, r.body)
	}
	for _, in := range c.instances {
		r := call(t, "GET", in.base+taskPath+"/"+id, "mg-alice", nil)
		if r.status != 200 || r.json(t)["status"] != "cancelled" {
			t.Fatalf("after the cancel on B, %s answers %d %s", in.name, r.status, r.body)
		}
	}
}

// TestInstancesShareQuota: 300 parallel creates spread over three instances against a quota of
// 100 accept exactly 100.
func TestInstancesShareQuota(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{})
	if accepted, refused := raceCreates(t, c, 300, "mg-quota"); accepted != 100 || refused != 200 {
		t.Fatalf("accepted %d, refused %d; want exactly 100 and 200", accepted, refused)
	}
	r := call(t, "GET", c.instances[1].base+taskPath+"?page_size=500", "mg-quota", nil)
	if r.json(t)["total"] != float64(100) {
		t.Fatalf("list shows %v tasks, want 100", r.json(t)["total"])
	}
}

// raceCreates sends n video creates with key at once, spread over the cluster's instances in
// turn, and counts the answers 200 and 402; any other answer fails the test.
func raceCreates(t *testing.T, c *cluster, n int, key string) (accepted, refused int64) {
	t.Helper()
	var (
		ok, paid atomic.Int64
		mu       sync.Mutex
		other    []string
		wg       sync.WaitGroup
	)
	for i := range n {
		in := c.instances[i%len(c.instances)]
		wg.Go(func() {
			r, err := send("POST", in.base+taskPath, key, `{"model":"seedance-sim","content":[{"type":"text","text":"q"}]}`)
			switch {
			case err == nil && r.status == 200:
				ok.Add(1)
			case err == nil && r.status == 402:
				paid.Add(1)
			default:
				mu.Lock()
				other = append(other, fmt.Sprintf("%d %s %v", r.status, r.body, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("%d answers neither 200 nor 402, e.g. %s", len(other), other[0])
	}
	return ok.Load(), paid.Load()
}

// TestInstancesShareRateWindow: a rate of 10 per minute holds across three instances.
func TestInstancesShareRateWindow(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{})
	allowed, limited := raceStatuses(30, func(i int) (response, error) {
		return send("GET", c.instances[i%3].base+"/v1/models", "mg-rate", nil)
	})
	if allowed != 10 || limited != 20 {
		t.Fatalf("allowed %d, limited %d; want 10 and 20", allowed, limited)
	}
}

// raceStatuses sends n requests at once, the i-th with send(i), and counts the answers that are
// 200 and those that are 429.
func raceStatuses(n int, send func(i int) (response, error)) (allowed, limited int64) {
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := send(i)
			switch {
			case err == nil && r.status == 200:
				ok.Add(1)
			case err == nil && r.status == 429:
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	return ok.Load(), refused.Load()
}

// TestRevokeOnOneInstanceRefusedOnAll: a key revoked through A's admin API is refused by C
// within a second.
func TestRevokeOnOneInstanceRefusedOnAll(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{})
	a, cc := c.instances[0], c.instances[2]
	r := call(t, "POST", "http://"+a.admin+"/mediagw/keys", "", `{"account":"acme"}`)
	id, secret := r.field("id"), r.field("key")
	if r.status != 201 || id == "" || secret == "" {
		t.Fatalf("creating a key on A = %d %s", r.status, r.body)
	}
	for _, in := range c.instances {
		if r := call(t, "GET", in.base+"/v1/models", secret, nil); r.status != 200 {
			t.Fatalf("new key on %s = %d %s", in.name, r.status, r.body)
		}
	}
	// C has the record cached now; disable the key through A.
	if r := call(t, "PATCH", "http://"+a.admin+"/mediagw/keys/"+id, "", `{"disabled":true}`); r.status != 200 {
		t.Fatalf("disabling on A = %d %s", r.status, r.body)
	}
	seenWithin(t, cc.base+"/v1/models", secret, 403, time.Now(), "the key was disabled on A")
	if r := call(t, "DELETE", "http://"+a.admin+"/mediagw/keys/"+id, "", nil); r.status != 200 {
		t.Fatalf("revoking on A = %d %s", r.status, r.body)
	}
	seenWithin(t, cc.base+"/v1/models", secret, 401, time.Now(), "the key was revoked on A")
}

// seenWithin polls GET url with key until it answers status, and fails if a request sent more
// than a second after changed (when change happened) still answers otherwise (its answer may
// come back later on a loaded machine).
func seenWithin(t *testing.T, url, key string, status int, changed time.Time, change string) {
	t.Helper()
	for {
		sent := time.Now()
		r := call(t, "GET", url, key, nil)
		if r.status == status {
			return
		}
		if sent.Sub(changed) > time.Second {
			t.Fatalf("%s still answers %d to a request sent %v after %s", url, r.status, sent.Sub(changed), change)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSIGKILLedInstanceWorkTakenOver: A is killed while callbacks are pending and tasks are
// unfinished; B and C deliver every event (at least once; deduplicated by webhook-id) and finish
// every task.
func TestSIGKILLedInstanceWorkTakenOver(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{queuedFor: "2s", runningFor: "2s", watchInterval: "200ms"})
	var accept atomic.Bool
	rc := newReceiver(t, func(int) int {
		if accept.Load() {
			return 200
		}
		return 503
	})
	a := c.instances[0]
	const n = 12
	ids := make([]string, 0, n)
	for i := range n {
		ids = append(ids, createTask(t, c.instances[i%3], "mg-alice", fmt.Sprintf(`,"callback_url":%q`, rc.URL)))
	}
	// Some deliveries have been refused: events are pending. Kill A now.
	waitFor(t, "refused deliveries", func() bool { return len(rc.seen()) >= 3 })
	a.proc.kill()
	accept.Store(true)

	// Nobody queries the tasks: only the survivors' watchers can see them finish, and only
	// their outboxes can deliver the events A had claimed or queued.
	succeeded := func() map[string]bool {
		done := map[string]bool{}
		for _, d := range rc.seen() {
			var m struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}
			decodeJSONQuiet(d.body, &m)
			if m.Status == "succeeded" {
				done[m.ID] = true
			}
		}
		return done
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(succeeded()) < n {
		if time.Now().After(deadline) {
			var missing []string
			for _, id := range ids {
				if !succeeded()[id] {
					missing = append(missing, id)
				}
			}
			t.Fatalf("no succeeded callback for %v after A died; %d attempts seen", missing, len(rc.seen()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, id := range ids {
		r := call(t, "GET", c.instances[1+len(id)%2].base+taskPath+"/"+id, "mg-alice", nil)
		if r.status != 200 || r.json(t)["status"] != "succeeded" {
			t.Fatalf("task %s after A died: %d %s", id, r.status, r.body)
		}
	}
	idsByEvent := map[string]string{}
	for _, d := range rc.seen() {
		var m struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		decodeJSONQuiet(d.body, &m)
		ev := m.ID + "/" + m.Status
		if prev, ok := idsByEvent[ev]; ok && prev != d.id {
			t.Fatalf("event %s delivered under two webhook-ids: %s and %s", ev, prev, d.id)
		}
		idsByEvent[ev] = d.id
	}
}

// TestRedisRestartKeepsAcknowledgedTasks: every task acknowledged by any instance is still there
// after redis-server is killed and restarted (AOF, appendfsync always).
func TestRedisRestartKeepsAcknowledgedTasks(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{})
	var ids []string
	for i := range 30 {
		ids = append(ids, createTask(t, c.instances[i%3], "mg-alice", ""))
	}
	c.redis.Restart(true)
	for i, id := range ids {
		in := c.instances[(i+1)%3]
		deadline := time.Now().Add(20 * time.Second)
		for {
			// The instances reconnect by themselves; the first calls may meet the reconnect.
			r, err := send("GET", in.base+taskPath+"/"+id, "mg-alice", nil)
			if err == nil && r.status == 200 && r.field("id") == id {
				break
			}
			if err == nil && r.status == 400 {
				t.Fatalf("task %s lost in the redis restart: %s answers %d %s", id, in.name, r.status, r.body)
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s after the redis restart on %s: %d %s %v", id, in.name, r.status, r.body, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// decodeJSONQuiet decodes a callback body; a body that is not JSON leaves v empty, which the
// callers' checks then report.
func decodeJSONQuiet(b []byte, v any) {
	if err := json.Unmarshal(b, v); err != nil {
		return
	}
}

// TestInstancesShareIdempotencyUsageAndSecret: concurrent retries of one Idempotency-Key on
// three instances create one upstream task; usage counted on B and C is read on A; every
// instance signs callbacks with one webhook secret.
func TestInstancesShareIdempotencyUsageAndSecret(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, clusterOptions{})
	body := `{"model":"seedance-sim","content":[{"type":"text","text":"once"}]}`
	var (
		mu  sync.Mutex
		ids = map[string]int{}
		bad []string
		wg  sync.WaitGroup
	)
	for i := range 30 {
		in := c.instances[i%3]
		wg.Go(func() {
			req, err := http.NewRequest("POST", in.base+taskPath, strings.NewReader(body))
			if err != nil {
				mu.Lock()
				bad = append(bad, err.Error())
				mu.Unlock()
				return
			}
			req.Header.Set("Authorization", "Bearer mg-bob")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "retry-42")
			r, err := sendRequest(req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && r.status == 200:
				ids[r.field("id")]++
			case err == nil && r.status == 409 && r.field("code") == "idempotency_in_progress": // the first is still in flight on another instance
			default:
				bad = append(bad, fmt.Sprintf("%d %s %v", r.status, r.body, err))
			}
		})
	}
	wg.Wait()
	if len(bad) > 0 || len(ids) != 1 {
		t.Fatalf("answers: ids %v, others %v; want one task id", ids, bad)
	}
	r := call(t, "GET", c.instances[2].base+taskPath+"?page_size=50", "mg-bob", nil)
	if r.json(t)["total"] != float64(1) {
		t.Fatalf("bob has %v tasks after 30 retries of one key, want 1: %s", r.json(t)["total"], r.body)
	}

	// Usage: tasks created on B and C are counted for alice, read through A's admin API.
	createTask(t, c.instances[1], "mg-alice", "")
	createTask(t, c.instances[2], "mg-alice", "")
	waitFor(t, "alice's usage seen on A", func() bool {
		r := call(t, "GET", "http://"+c.instances[0].admin+"/mediagw/accounts/alice/usage", "", nil)
		return r.status == 200 && r.json(t)["tasks"] == float64(2)
	})

	// The webhook secret of an account is one across instances.
	var secrets []string
	for _, in := range c.instances {
		r := call(t, "GET", "http://"+in.admin+"/mediagw/accounts/alice", "", nil)
		s, _ := r.json(t)["webhook_secret"].(string)
		if s == "" {
			t.Fatalf("no webhook secret on %s: %s", in.name, r.body)
		}
		secrets = append(secrets, s)
	}
	if secrets[0] != secrets[1] || secrets[1] != secrets[2] {
		t.Fatal("the instances sign callbacks with different webhook secrets")
	}
}
