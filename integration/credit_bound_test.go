package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
)

// TestCreditsKeepTheBalanceBounded: credits through the admin API cannot take a balance past
// the ledger's bound (9007199254.740991 units), beyond which it would no longer be computed
// exactly: the credit that would is a 400 that says so, and the balance stays as it was.
func TestCreditsKeepTheBalanceBounded(t *testing.T) {
	e := startKeysGateway(t)
	credit := func(amount, key string) response {
		t.Helper()
		return e.adminMoney(t, "POST", "/mediagw/accounts/acme/credit", `{"amount":"`+amount+`"}`,
			map[string]string{"Content-Type": "application/json", "Idempotency-Key": key})
	}
	if r := credit("9007199254.740991", "k1"); r.status != 200 {
		t.Fatalf("a credit of the largest amount = %d %s", r.status, r.body)
	}
	for i, amount := range []string{"0.000001", "9007199254.740991"} {
		r := credit(amount, "k"+string(rune('2'+i)))
		if r.status != 400 || !strings.Contains(r.field("error"), "past") {
			t.Fatalf("a credit of %s past the bound = %d %s, want 400", amount, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme/balance", nil); r.status != 200 || r.field("balance") != "9007199254.740991" {
		t.Fatalf("balance = %d %s", r.status, r.body)
	}
}

// boundHoldCaddyfile prices a simulated video model at 10 a task; the simulator keeps its tasks
// queued for a minute, so that a task's hold stays open until the test cancels it.
const boundHoldCaddyfile = `{
	{{globals}}
	mediagw {
		{{storage}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models sim-held
		}
		price sim-held {
			request 10
		}
		key mg-bound-holds {
			account bounded
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 100ms
		}
		respond 404
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 1m
		running_for 1s
		api_key sim-upstream-key
	}
}
`

// TestCreditBoundCountsOpenHolds: the bound holds for the balance an open hold's release
// leaves, not only for the balance available now, on both stores. At 9007199254.740991 less a
// task's hold of 10, a credit of 5 is a 400 and credits nothing, since the release of the hold
// (the task cancelled) would take the balance past the bound; once the task is cancelled the
// balance is the bound again, and a credit of 0.000001 is refused too. (Before, the credit was
// taken, and the release left 9007199254.740996.)
func TestCreditBoundCountsOpenHolds(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	redis := testredis.Start(t, testredis.Options{})
	for _, store := range []struct{ name, line string }{
		{"badger", "storage badger " + t.TempDir()},
		{"redis", "storage redis " + redis.URL() + " {\n\t\t\tkey_prefix bound\n\t\t}"},
	} {
		t.Run(store.name, func(t *testing.T) {
			base, g := startSimGateway(t, boundHoldCaddyfile, map[string]string{"storage": store.line})
			e := keysEnv{g: g}
			e.credit(t, "bounded", "9007199254.740991", "bound-1")
			balance := func(want, held string) {
				t.Helper()
				if b := e.admin(t, "GET", "/mediagw/accounts/bounded/balance", nil); b.field("balance") != want || b.field("held") != held {
					t.Fatalf("balance %s; want %s with %s held", b.body, want, held)
				}
			}
			task := call(t, "POST", base+taskPath, "mg-bound-holds", `{"model":"sim-held","content":[{"type":"text","text":"a held task"}]}`)
			if task.status != 200 || task.field("id") == "" {
				t.Fatalf("create = %d %s", task.status, task.body)
			}
			balance("9007199244.740991", "10")
			credit := func(amount, key string) {
				t.Helper()
				r := e.adminMoney(t, "POST", "/mediagw/accounts/bounded/credit", `{"amount":"`+amount+`"}`,
					map[string]string{"Content-Type": "application/json", "Idempotency-Key": key})
				if r.status != 400 || !strings.Contains(r.field("error"), "past") {
					t.Fatalf("a credit of %s past the bound once the hold is released = %d %s, want 400", amount, r.status, r.body)
				}
			}
			credit("5", "bound-2")
			balance("9007199244.740991", "10")
			if r := call(t, "DELETE", base+taskPath+"/"+task.field("id"), "mg-bound-holds", nil); r.status != 200 {
				t.Fatalf("cancel = %d %s", r.status, r.body)
			}
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				b := e.admin(t, "GET", "/mediagw/accounts/bounded/balance", nil)
				if b.field("held") == "0" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("balance after the cancel: %s; want nothing held", b.body)
				}
			}
			balance("9007199254.740991", "0")
			credit("0.000001", "bound-3")
		})
	}
}
