package integration

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

const crashGatewayCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		provider sim {
			base_url http://127.0.0.1:%d/api/v3
			api_key sim-key
			models seedance-sim
		}
		key mg-alice {
			account alice
		}
		key mg-bob {
			account bob
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

const crashSimulatorCaddyfile = `{
	admin off
	persist_config off
}

http://127.0.0.1:%d {
	mediagw_simulator {
		queued_for 1h
	}
}
`

// TestAcknowledgedTasksSurviveSIGKILL creates tasks through a caddy subprocess, kills it with
// SIGKILL right after the last answer, restarts it on the same store, and checks that every task
// whose id was returned is still known to its owner, and only to its owner.
func TestAcknowledgedTasksSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	simPort, gwPort := freePort(t), freePort(t)
	startCaddyProcess(t, fmt.Sprintf(crashSimulatorCaddyfile, simPort), fmt.Sprintf("http://127.0.0.1:%d/", simPort))
	store := t.TempDir()
	cfg := fmt.Sprintf(crashGatewayCaddyfile, store, simPort, gwPort)
	base := fmt.Sprintf("http://127.0.0.1:%d", gwPort)
	gw := startCaddyProcess(t, cfg, base+"/")

	const n = 40
	body := `{"model":"seedance-sim","content":[{"type":"text","text":"durable"}]}`
	var (
		mu     sync.Mutex
		ids    []string
		refuse string
		wg     sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n / 4 {
				r, err := send("POST", base+"/api/v3/contents/generations/tasks", "mg-alice", body)
				mu.Lock()
				if id := r.field("id"); err == nil && r.status == 200 && id != "" {
					ids = append(ids, id)
				} else {
					refuse = fmt.Sprintf("%d %s %v", r.status, r.body, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	gw.kill()
	if len(ids) != n {
		t.Fatalf("only %d of %d creates were acknowledged; last refusal: %s", len(ids), n, refuse)
	}

	startCaddyProcess(t, cfg, base+"/")
	for _, id := range ids {
		r := call(t, "GET", base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
		if r.status != 200 || r.json(t)["status"] != "queued" {
			t.Fatalf("after restart, task %s = %d %s", id, r.status, r.body)
		}
		if r := call(t, "GET", base+"/api/v3/contents/generations/tasks/"+id, "mg-bob", nil); r.status != 400 {
			t.Fatalf("after restart, bob reads alice's task %s: %d", id, r.status)
		}
	}
	r := call(t, "GET", base+"/api/v3/contents/generations/tasks?page_size=500", "mg-alice", nil)
	if total, _ := r.json(t)["total"].(float64); int(total) != n {
		t.Fatalf("after restart the list has %v tasks, want %d", r.json(t)["total"], n)
	}
}

const crashCallbackGatewayCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		storage badger %s
		provider sim {
			base_url http://127.0.0.1:%d/api/v3
			api_key sim-key
			models seedance-sim
		}
		key mg-alice {
			account alice
		}
		watcher {
			interval 100ms
		}
		callbacks {
			allow_private
			retry_schedule 300ms 300ms 300ms 300ms 300ms 300ms 300ms 300ms 300ms 300ms
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// TestPendingCallbacksSurviveSIGKILL kills the gateway while a callback is still being retried
// and checks that the restarted gateway delivers it, with the same webhook-id.
func TestPendingCallbacksSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	simPort, gwPort := freePort(t), freePort(t)
	startCaddyProcess(t, fmt.Sprintf(crashSimulatorCaddyfile, simPort), fmt.Sprintf("http://127.0.0.1:%d/", simPort))
	var accept atomic.Bool
	rc := newReceiver(t, func(int) int {
		if accept.Load() {
			return 200
		}
		return 503
	})
	cfg := fmt.Sprintf(crashCallbackGatewayCaddyfile, t.TempDir(), simPort, gwPort)
	base := fmt.Sprintf("http://127.0.0.1:%d", gwPort)
	gw := startCaddyProcess(t, cfg, base+"/")

	r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-alice",
		fmt.Sprintf(`{"model":"seedance-sim","content":[{"type":"text","text":"x"}],"callback_url":%q}`, rc.URL))
	if r.status != 200 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	waitFor(t, "a first, refused delivery", func() bool { return len(rc.seen()) >= 1 })
	gw.kill()
	refused := rc.seen()[0]
	accept.Store(true)

	startCaddyProcess(t, cfg, base+"/")
	waitFor(t, "the delivery after restart", func() bool {
		s := rc.seen()
		return len(s) > 1 && s[len(s)-1].id == refused.id
	})
	if refused.status != "queued" {
		t.Fatalf("first callback status = %q", refused.status)
	}
}
