package integration

import (
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/caddymodule"
)

// TestRefusedReloadLeavesTheRunningConfigsAnswerMemory: the config loaded last sets the size of
// the one answer budget, and a refused one leaves the running config's. Caddy starts a config's
// apps in map order and stops the started ones when a later one fails: a reload whose http app
// cannot bind its port is refused and the old config keeps running. The mediagw app, started
// first, set its answer_memory (1 MiB here, against the running 64 MiB); its Stop gives the
// running config its bounds back, so the running gateway still serves a 2 MB answer.
func TestRefusedReloadLeavesTheRunningConfigsAnswerMemory(t *testing.T) {
	fake, base, g, ids := startAnswerMemoryGateway(t, oneShare("64MiB"), "64MiB", "image-async", 1)
	fake.set(ids[0], &heldTask{answer: succeededAnswer(ids[0], 1, 2<<20, "")})
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	g.vars["busy_port"] = fmt.Sprint(busy.Addr().(*net.TCPAddr).Port)
	failing := answerMemoryCaddyfile + "\nhttp://127.0.0.1:{{busy_port}} {\n\trespond \"x\"\n}\n"
	g.vars["answer_memory"], g.vars["max_answer"] = oneShare("1MiB"), "1MiB"
	for i := range 8 {
		if err := g.reload(failing); err == nil {
			t.Fatal("a reload onto a port in use was accepted")
		}
		app, err := caddy.ActiveContext().App("mediagw")
		if err != nil {
			t.Fatal(err)
		}
		limit := app.(*caddymodule.App).AnswerBudget().Limit()
		r := call(t, http.MethodGet, base+"/v1/images/tasks/"+ids[0], "mg-image-tasks", nil)
		if limit != 64<<20 || r.status != http.StatusOK {
			t.Fatalf("after failed reload %d: the running config's budget is %d bytes (want 64 MiB); a 2 MB query = %d %.120s", i+1, limit, r.status, r.body)
		}
	}
}
