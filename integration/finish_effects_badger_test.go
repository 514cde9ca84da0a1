package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/storage"
)

// finishEffectsBadgerCaddyfile is finishEffectsCaddyfile on Badger.
const finishEffectsBadgerCaddyfile = `{
	admin 127.0.0.1:%[1]d
	persist_config off
	mediagw {
		storage badger %[2]s
		provider sim {
			base_url %[3]s/api/v3
			api_key sim-key
			models seedance-sim
		}
		price seedance-sim {
			request 1
		}
		watcher {
			interval 200ms
		}
	}
}

http://127.0.0.1:%[4]d {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// TestFinishOfKilledBadgerGatewayEndsItsHold: the gateway on Badger (one process) is killed
// (SIGKILL) after its watcher's batch wrote the finish of 200 tasks (one transaction) and while
// it ends their holds one by one (each synced). docs/billing.md's crash semantics promise that
// nothing acknowledged is lost and that a task's hold is settled by its finish; the restarted
// gateway must therefore end the holds of the tasks whose records say finished: the
// reconciler leaves bound holds to their tasks, and no read finishes a finished task again.
func TestFinishOfKilledBadgerGatewayEndsItsHold(t *testing.T) {
	t.Parallel()
	const tasks = 200
	var shift atomic.Int64
	sim := simulator.New()
	sim.QueuedFor, sim.RunningFor, sim.APIKey = time.Hour, 0, "sim-key"
	sim.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	upstream := httptest.NewServer(sim)
	defer upstream.Close()
	dir := t.TempDir()
	adminPort, port := freePort(t), freePort(t)
	base, admin := fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", adminPort)
	cfg := fmt.Sprintf(finishEffectsBadgerCaddyfile, adminPort, dir, upstream.URL, port)
	g := startCaddyProcess(t, cfg, base+"/")

	r := call(t, "POST", admin+"/mediagw/keys", "", `{"account":"finish"}`)
	secret := r.field("key")
	if r.status != 201 || secret == "" {
		t.Fatalf("creating the key = %d %s", r.status, r.body)
	}
	credit, _ := http.NewRequest("POST", admin+"/mediagw/accounts/finish/credit", strings.NewReader(`{"amount":"1000000","note":"test"}`))
	credit.Header.Set("Content-Type", "application/json")
	credit.Header.Set("Idempotency-Key", "credit-1")
	if r := do(t, credit); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	held := func() string {
		r, err := send("GET", admin+"/mediagw/accounts/finish/balance", "", nil)
		if err != nil {
			return ""
		}
		return r.field("held")
	}
	// Each round makes 200 tasks, lets them succeed and kills the gateway in its sweep; a round
	// whose kill came before or after every finish's window is followed by another.
	for round := range 5 {
		createFinishTasks(t, base, secret, tasks)
		if h := held(); h != fmt.Sprint(tasks) {
			t.Fatalf("held after %d creates at 1 = %q", tasks, h)
		}
		shift.Add(int64(2 * time.Hour)) // every task succeeds
		for limit := time.Now().Add(30 * time.Second); ; {
			if h := held(); h != "" && h != fmt.Sprint(tasks) || time.Now().After(limit) {
				g.kill()
				break
			}
		}
		store := openBadgerStore(t, dir)
		caught := 0
		page, err := store.ListTasks(context.Background(), "finish", storage.TaskQuery{PageNum: 1, PageSize: 5 * tasks})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range page.Tasks {
			if h, err := store.HoldByID(context.Background(), rec.HoldID); rec.Finished && err == nil && h.State == storage.HoldOpen {
				caught++
			}
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d, after the kill: %d records finished with their hold open", round, caught)

		g = startCaddyProcess(t, cfg, base+"/")
		waitFor(t, "every task succeeded", func() bool {
			r, err := send("GET", base+taskPath+"?page_size=500&filter.status=succeeded", secret, nil)
			return err == nil && r.status == 200 && r.json(t)["total"] == float64(tasks*(round+1))
		})
		for limit := time.Now().Add(15 * time.Second); held() != "0"; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(limit) {
				t.Fatalf("15 s after the restarted gateway showed every task succeeded, %s is still held (%d records were finished with their hold open at the kill); want every hold ended", held(), caught)
			}
		}
		if caught > 0 {
			return
		}
	}
}

// createFinishTasks makes n tasks of seedance-sim through the gateway at base, 16 at a time.
func createFinishTasks(t *testing.T, base, key string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed, next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				r, err := send("POST", base+taskPath, key, `{"model":"seedance-sim","content":[{"type":"text","text":"finish"}]}`)
				if err != nil || r.status != 200 || r.field("id") == "" {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d creates failed", failed.Load(), n)
	}
}
