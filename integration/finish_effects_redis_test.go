package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// finishEffectsCaddyfile is one gateway on a shared redis-server, its task provider a simulator
// in the test's process (whose clock the test moves), its one model priced 1 a task; %[6]s is
// more lines of the mediagw block.
const finishEffectsCaddyfile = `{
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

// finishSweep is a gateway (a) on a redis-server whose tasks (ids, made through a) wait queued
// at a simulator until succeed is called; then they all succeed at once, and a's watcher
// finishes them in one sweep.
type finishSweep struct {
	redis  *testredis.Server
	store  storage.Store
	a      *caddyProcess
	launch func() (p *caddyProcess, base, admin string)
	keyID  string
	ids    []string
	shift  atomic.Int64 // what the simulator's clock is ahead, in nanoseconds
}

// startFinishSweep starts the sweep's gateway and makes n tasks through it, for one key of an
// account "finish" with a balance that pays for them all.
func startFinishSweep(t *testing.T, n int) *finishSweep {
	s := &finishSweep{}
	sim := simulator.New()
	sim.QueuedFor, sim.RunningFor, sim.APIKey = time.Hour, 0, "sim-key"
	sim.Now = func() time.Time { return time.Now().Add(time.Duration(s.shift.Load())) }
	upstream := httptest.NewServer(sim)
	t.Cleanup(upstream.Close)
	s.redis = testredis.Start(t, testredis.Options{})
	prefix := "mg-" + strings.ToLower(t.Name())
	s.launch = func() (*caddyProcess, string, string) {
		adminPort, port := freePort(t), freePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		p := startCaddyProcess(t, fmt.Sprintf(finishEffectsCaddyfile, adminPort, s.redis.URL(), prefix, upstream.URL, port, ""), base+"/")
		return p, base, fmt.Sprintf("127.0.0.1:%d", adminPort)
	}
	a, aBase, aAdmin := s.launch()
	s.a = a

	r := call(t, "POST", "http://"+aAdmin+"/mediagw/keys", "", `{"account":"finish","max_active_tasks":1000}`)
	secret := r.field("key")
	s.keyID = r.field("id")
	if r.status != 201 || s.keyID == "" || secret == "" {
		t.Fatalf("creating the key = %d %s", r.status, r.body)
	}
	credit, _ := http.NewRequest("POST", "http://"+aAdmin+"/mediagw/accounts/finish/credit", strings.NewReader(`{"amount":"1000000","note":"test"}`))
	credit.Header.Set("Content-Type", "application/json")
	credit.Header.Set("Idempotency-Key", "credit-1")
	if r := do(t, credit); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}

	s.ids = make([]string, n)
	var wg sync.WaitGroup
	var failed, next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				r, err := send("POST", aBase+taskPath, secret, `{"model":"seedance-sim","content":[{"type":"text","text":"finish"}]}`)
				if err != nil || r.status != 200 || r.field("id") == "" {
					failed.Add(1)
					continue
				}
				s.ids[i] = r.field("id")
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d creates failed", failed.Load(), n)
	}
	store, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: s.redis.URL(), KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s.store = store
	if f, _ := s.look(); f != 0 {
		t.Fatalf("%d tasks finished before the simulator finished any", f)
	}
	return s
}

// look reads every record and counts those finished, and among them those whose hold is still
// open.
func (s *finishSweep) look() (finished, openHolds int) {
	ctx := context.Background()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(s.ids)); i = next.Add(1) - 1 {
				rec, err := s.store.Task(ctx, s.ids[i])
				if err != nil || !rec.Finished {
					continue
				}
				h, err := s.store.HoldByID(ctx, rec.HoldID)
				mu.Lock()
				finished++
				if err == nil && h.State == storage.HoldOpen {
					openHolds++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return finished, openHolds
}

// stopMidFinish makes every task succeed, then stops a (SIGSTOP) again and again while its
// watcher finishes them, reading the store each time, and leaves it stopped as soon as a record
// is finished whose hold is still open (a won the finish and has not ended the hold yet), or
// every record is finished. It returns how many such records it found.
func (s *finishSweep) stopMidFinish(t *testing.T) (caught int) {
	s.shift.Store(int64(2 * time.Hour))
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(time.Millisecond)
		if err := s.a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		finished, open := s.look()
		if open > 0 || finished == len(s.ids) || time.Now().After(deadline) {
			t.Logf("A stopped with %d of %d records finished, %d of those with their hold open", finished, len(s.ids), open)
			return open
		}
		if err := s.a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
}

// wantEveryHoldEnded waits until every task is finished, then gives the holds and slots 15 s
// to end and come back.
func (s *finishSweep) wantEveryHoldEnded(t *testing.T, admin string, caught int) {
	waitFor(t, "every task finished", func() bool {
		f, _ := s.look()
		return f == len(s.ids)
	})
	settled := time.Now().Add(15 * time.Second)
	for {
		bal, err := s.store.Balance(context.Background(), "finish")
		if err != nil {
			t.Fatal(err)
		}
		active, _ := keyUsage(t, &instance{name: "B", admin: admin}, s.keyID)
		if bal.Held == 0 && active == 0 {
			return
		}
		if time.Now().After(settled) {
			_, open := s.look()
			t.Fatalf("15 s after every task finished: %d holds of finished tasks still open (held %d µ; %d caught open when A was stopped), %v active-task slots still taken; want every hold ended and every slot back",
				open, bal.Held, caught, active)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFinishOfKilledInstanceEndsItsHoldAndSlot: a task's finish is a compare-and-set on its
// record, and the winner then ends the task's hold and gives its slot back. An instance killed
// (SIGKILL) between the two leaves a record that says finished, so no other instance reads
// or finishes it again, and a hold bound to the task, which the reconciler leaves to the task:
// the hold must still end, and the slot come back, once the other instances have taken the
// dead one's work over. (The task's callback, queued by the winner after those two, is lost
// the same way.)
//
// 400 tasks made through instance A succeed at once; A is stopped in its sweep of them with a
// finished record whose hold is open (finishSweep.stopMidFinish), and killed. Instance B then
// takes A's work over. Once every record is finished, every hold must end within 15 s and the
// key's active-task count come back to 0.
func TestFinishOfKilledInstanceEndsItsHoldAndSlot(t *testing.T) {
	t.Parallel()
	s := startFinishSweep(t, 400)
	caught := s.stopMidFinish(t)
	s.a.kill()
	_, _, bAdmin := s.launch()
	s.wantEveryHoldEnded(t, bAdmin, caught)
}

// TestFinishDuringRedisRestartEndsItsHoldAndSlot: the same finish, with no process dying: the
// redis-server restarts (stopped for 3 s) between the compare-and-set that finished a task and
// the winner's end of its hold. The winner, A, is still running when the server is back; the
// hold must end and the slot come back all the same. (A store call fails at once while the
// server is down, so the winner's few retries of the hold's end are spent within about 1.5 s.)
func TestFinishDuringRedisRestartEndsItsHoldAndSlot(t *testing.T) {
	t.Parallel()
	s := startFinishSweep(t, 400)
	caught := s.stopMidFinish(t)
	s.redis.Stop()
	if err := s.a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	s.redis.Restart(false)
	_, _, bAdmin := s.launch() // only to read the key's usage; A goes on with every task
	s.wantEveryHoldEnded(t, bAdmin, caught)
}
