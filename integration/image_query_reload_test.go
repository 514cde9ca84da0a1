package integration

import (
	"bytes"
	"net/http"
	"testing"
	"time"
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
	// The second query reaches the provider at once if it makes a call of its own; give it
	// time to join the call in flight instead.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n := fake.queried(id) - queried; n > 1 {
			close(before)
			t.Fatalf("the query served by the reloaded config made a call of its own: %d calls", n)
		}
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
