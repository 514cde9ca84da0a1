package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// TestCancelThatMeetsTheSuccessChargesTheTask: a client cancels a running task on one
// instance, and the task succeeds upstream between the gateway's read of it (running) and its
// DELETE, which the provider then takes as the delete of a finished task (Ark: "a terminal
// task's record is deleted"). The provider made, and bills, the video; the gateway's record
// must not be released as if nothing had been made: docs/api.md says a task that has already
// finished is deleted "and never refunded as cancelled". The hold must be settled.
//
// The simulator's clock moves on (the task then succeeded) the moment the DELETE reaches it,
// before it answers, which is the race's order of events made certain.
func TestCancelThatMeetsTheSuccessChargesTheTask(t *testing.T) {
	t.Parallel()
	var shift atomic.Int64
	sim := simulator.New()
	sim.QueuedFor, sim.RunningFor, sim.APIKey = 0, time.Hour, "sim-key"
	sim.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			shift.Store(int64(2 * time.Hour)) // the task's run ends just before its DELETE arrives
		}
		sim.ServeHTTP(w, r)
	}))
	defer upstream.Close()

	redis := testredis.Start(t, testredis.Options{})
	prefix := "mg-" + strings.ToLower(t.Name())
	adminPort, port := freePort(t), freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startCaddyProcess(t, fmt.Sprintf(cancelRacesCaddyfile, adminPort, redis.URL(), prefix, upstream.URL, port, ""), base+"/")
	admin := fmt.Sprintf("http://127.0.0.1:%d", adminPort)

	r := call(t, "POST", admin+"/mediagw/keys", "", `{"account":"meets"}`)
	secret := r.field("key")
	if r.status != 201 || secret == "" {
		t.Fatalf("creating the key = %d %s", r.status, r.body)
	}
	credit, _ := http.NewRequest("POST", admin+"/mediagw/accounts/meets/credit", strings.NewReader(`{"amount":"10","note":"test"}`))
	credit.Header.Set("Content-Type", "application/json")
	credit.Header.Set("Idempotency-Key", "credit-1")
	if r := do(t, credit); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	id := createRaceTask(t, base, secret)
	waitFor(t, "the task running", func() bool {
		r := call(t, "GET", base+taskPath+"/"+id, secret, nil)
		return r.status == 200 && r.field("status") == "running"
	})

	r = call(t, "DELETE", base+taskPath+"/"+id, secret, nil)
	t.Logf("DELETE of the running task = %d %s", r.status, r.body)

	ctx := context.Background()
	store, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: redis.URL(), KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var kinds map[string]int
	waitFor(t, "the task's hold ended", func() bool {
		b, err := store.Balance(ctx, "meets")
		if err != nil {
			t.Fatal(err)
		}
		_, kinds = ledgerSum(t, store, "meets")
		return b.Held == 0 && kinds[storage.EntryHold] == 1
	})
	if kinds[storage.EntrySettle] != 1 || kinds[storage.EntryRelease] != 0 {
		t.Fatalf("ledger entries %v; want the hold settled: the task succeeded upstream (and is billed there) before the DELETE deleted it", kinds)
	}
}

// createTaskAt creates a task of seedance-sim through the gateway at base and returns its id.
func createRaceTask(t *testing.T, base, key string) string {
	t.Helper()
	r := call(t, "POST", base+taskPath, key, `{"model":"seedance-sim","content":[{"type":"text","text":"meets"}]}`)
	if r.status != 200 || r.field("id") == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	return r.field("id")
}

// cancelRacesCaddyfile is a gateway on a redis-server (%[2]s, key prefix %[3]s) whose one
// provider, sim at %[4]s, serves seedance-sim at 1 a request; its watcher reads every 200 ms. %[6]s
// is more of the mediagw block.
const cancelRacesCaddyfile = `{
	admin 127.0.0.1:%[1]d
	persist_config off
	mediagw {
		storage redis %[2]s {
			key_prefix %[3]s
		}
		provider sim {
			base_url %[4]s/api/v3
			api_key sim-key
			models seedance-sim
		}
		price seedance-sim {
			request 1
		}
		watcher {
			interval 200ms
		}
		%[6]s
	}
}

http://127.0.0.1:%[5]d {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`
