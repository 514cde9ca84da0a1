package integration

import (
	"bytes"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// TestImageTaskQueryIsSharedAcrossReloads: a query of an image task is waiting for the
// provider's answer when the config is reloaded; a query of the same task that the new config
// serves joins that call instead of making its own. The provider is called once, and both
// clients get the same answer. (Before, each config's handler had calls of its own: two calls,
// two answers held, for one task.)
func TestImageTaskQueryIsSharedAcrossReloads(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, oneShare("64MiB"), "48MiB", "image-async", 1)
	id := ids[0]
	before := make(chan struct{})
	answer := succeededAnswer(id, 1, 1<<20, "")
	fake.set(id, &heldTask{answer: answer, before: before})
	queried := fake.queried(id)
	query := func(out chan<- response) {
		r, err := send(http.MethodGet, base+"/v1/images/tasks/"+id, "mg-image-tasks", nil)
		if err != nil {
			r.status = 0
		}
		out <- r
	}
	first, second := make(chan response, 1), make(chan response, 1)
	go query(first)
	waitFor(t, "the first query's call", func() bool { return fake.queried(id) == queried+1 })

	old := activeApp(t)
	g.vars["answer_memory"] = oneShare("60MiB")
	reloaded := make(chan error, 1)
	go func() { reloaded <- g.reload(answerMemoryCaddyfile) }() // ends once the old config's query has
	waitFor(t, "the new config", func() bool { return activeApp(t) != old })

	go query(second)
	// Wait until both queries wait on a call (past join): only then may the first call end (a
	// query that came after it would rightly make a call of its own). A second call that the
	// reloaded config made is counted at the latest once both queries are answered.
	waitFor(t, "both queries waiting for a provider call", func() bool { return queriesWaiting() >= 2 })
	if n := fake.queried(id) - queried; n > 1 {
		close(before)
		t.Fatalf("the query served by the reloaded config made a call of its own: %d calls", n)
	}
	close(before)
	a, b := <-first, <-second
	if a.status != http.StatusOK || b.status != http.StatusOK || !bytes.Equal(a.body, b.body) || len(a.body) < 1<<20 {
		t.Fatalf("the queries across the reload = %d (%d bytes), %d (%d bytes); want 200 and the same answer", a.status, len(a.body), b.status, len(b.body))
	}
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if n := fake.queried(id) - queried; n != 1 {
		t.Fatalf("the provider was called %d times for the two queries, want once", n)
	}
	awaitHeldAnswers(t, 0, 0)
}

// queriesWaiting is the number of goroutines of the process that wait in an image task query
// for the provider call it joined (imageedit's Handler.query, in its select on the call's end).
func queriesWaiting() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	waiting := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		// A goroutine's header ("goroutine 94 [select]:"), then its frames, the innermost first
		// (runtime.Stack leaves out the runtime's own).
		if header, frames, ok := strings.Cut(g, "\n"); ok && strings.Contains(header, "[select") &&
			strings.HasPrefix(frames, "github.com/mediagw/mediagw/handlers/imageedit.(*Handler).query(") {
			waiting++
		}
	}
	return waiting
}
