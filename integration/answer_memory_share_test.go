package integration

// An account may hold at most its share of answer_memory (answer_memory_per_account, default a
// quarter), which holds one answer of max_answer: nothing is borrowed past it, so one account's
// slow clients never keep another account out of the room the shares leave it.

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTricklingReaderDoesNotMakeOtherAccountsLoseEdits: a painters client queries a task with a
// 50 MB answer and reads it at 256 KiB/s (16 KiB every 62.5 ms: an honest client on a 2 Mbit/s
// link, or one that means to hold the budget), within every bound of imageedit/answer_write.go,
// whose overall bound (30 s + 50 MB at 256 KiB/s = 230 s) lets it hold 50 MB of painters' share
// (64 MiB of answer_memory 128 MiB) for minutes. Twelve seconds in, an edit of another account
// (sketchers) is answered 15 MB, within its share and the room painters' share leaves: it is
// served and charged once, at once.
func TestTricklingReaderDoesNotMakeOtherAccountsLoseEdits(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, "128MiB\n\t\tanswer_memory_per_account 64MiB", "64MiB", "image-async", 1)
	fake.set(ids[0], &heldTask{answer: succeededAnswer(ids[0], 1, 50<<20, "")})
	read := trickleQuery(t, base, ids[0])
	awaitHeldAnswers(t, 50<<20, 51<<20)
	time.Sleep(12 * time.Second) // past the 10 s a stalled reader is given
	awaitBalance(t, g, "painters", "4.95", "0")
	t.Logf("held before the edit: %d", heldAnswers(t))
	began := time.Now()
	fake.answerEditsWith(&heldTask{answer: []byte(`{"created":1,"data":[{"b64_json":"` + strings.Repeat("iVBO", (15<<20)/4) + `"}]}`)})
	e := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-sketchers", imageEditBody("image-async", 1, "1024x1024", "auto"))
	t.Logf("edit: %d after %v; held %d; the trickling client read %d bytes", e.status, time.Since(began), heldAnswers(t), read.Load())
	if e.status != http.StatusOK || time.Since(began) > 12*time.Second {
		t.Fatalf("an edit of sketchers, while painters reads its 50 MB answer at 256 KiB/s = %d after %v %.200s", e.status, time.Since(began), e.body)
	}
	awaitBalance(t, g, "sketchers", "4.95", "0")
}

// trickleQuery queries the task id as painters on a connection of its own and reads the answer
// at 256 KiB/s until the test ends; it returns the count of bytes read so far.
func trickleQuery(t *testing.T, base, id string) *atomic.Int64 {
	t.Helper()
	conn := openQuery(t, base, id, 64<<10)
	stop, done := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { // before openQuery's, which closes conn
		close(stop)
		<-done
	})
	var total atomic.Int64
	go func() {
		defer close(done)
		buf := make([]byte, 16<<10)
		tick := time.NewTicker(62500 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			n, err := conn.Read(buf)
			total.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	return &total
}

// TestAccountPastItsShareIsRefusedItsOwnAnswers: answer_memory 128 MiB, 50 MiB and 4 KiB per
// account (and max_answer). While painters reads its 50 MiB answer slowly (its share all but
// less than an edit's 64 KiB reservation), painters' own query of another task (1 MiB) and its
// own edit are 503 gateway_busy with Retry-After, the edit refused before it is sent or charged;
// sketchers' query of the same size is served, and the painters client reads on.
func TestAccountPastItsShareIsRefusedItsOwnAnswers(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, "128MiB\n\t\tanswer_memory_per_account 51204KiB", "51204KiB", "image-async", 2)
	fake.set(ids[0], &heldTask{answer: succeededAnswer(ids[0], 1, 50<<20, "")})
	fake.set(ids[1], &heldTask{answer: succeededAnswer(ids[1], 1, 1<<20, "")})
	read := trickleQuery(t, base, ids[0])
	awaitHeldAnswers(t, 50<<20, 51<<20)
	awaitBalance(t, g, "painters", "4.85", "0.1") // one task settled at 0.05, the other held
	edits := fake.edited()

	own := call(t, http.MethodGet, base+"/v1/images/tasks/"+ids[1], "mg-image-tasks", nil)
	edit := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("image-async", 1, "1024x1024", "auto"))
	for name, r := range map[string]response{"its query": own, "its edit": edit} {
		if code, _ := errorCodeAndShape(r); r.status != http.StatusServiceUnavailable || code != "gateway_busy" || r.header.Get("Retry-After") != "1" {
			t.Errorf("painters past its share: %s = %d %s (Retry-After %q), want 503 gateway_busy", name, r.status, code, r.header.Get("Retry-After"))
		}
	}
	if fake.edited() != edits {
		t.Error("the edit of an account past its share was sent to the provider")
	}
	awaitBalance(t, g, "painters", "4.85", "0.1")

	// sketchers' task: created by sketchers, answered with a small result.
	sketches := imageTaskClient{t: t, base: base, key: "mg-image-sketchers"}
	id := sketches.create("/v1/images/edits", imageEditBody("image-async", 1, "1024x1024", "auto"))
	fake.set(id, &heldTask{answer: succeededAnswer(id, 1, 1<<20, "")})
	if r := call(t, http.MethodGet, base+"/v1/images/tasks/"+id, "mg-image-sketchers", nil); r.status != http.StatusOK {
		t.Fatalf("sketchers' query of a 1 MB answer while painters is past its share = %d %.200s", r.status, r.body)
	}
	before := read.Load()
	time.Sleep(4 * time.Second)
	if after := read.Load(); after-before < 512<<10 {
		t.Fatalf("the painters client read %d bytes in 4 s after another account's query: its write was given up", after-before)
	}
}

// TestAnswerMemoryIsOneAcrossReloads: a query of a 40 MB answer is held at its half (at least
// 20 MB of answer_memory 64 MiB) when the config is reloaded with answer_memory 60 MiB. The new
// config counts against the same budget: another account's query of a 40 MB answer finds no room
// (503 gateway_busy) while the old config's is held, and is served once it is passed on. (Before,
// each config had a budget of its own, and the process held 20 + 40 MB past 60 MiB.)
func TestAnswerMemoryIsOneAcrossReloads(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, oneShare("64MiB"), "48MiB", "image-async", 1)
	sketches := imageTaskClient{t: t, base: base, key: "mg-image-sketchers"}
	other := sketches.create("/v1/images/edits", imageEditBody("image-async", 1, "1024x1024", "auto"))
	gate := make(chan struct{})
	fake.set(ids[0], &heldTask{answer: succeededAnswer(ids[0], 1, 40<<20, ""), gate: gate, half: make(chan struct{})})
	fake.set(other, &heldTask{answer: succeededAnswer(other, 1, 40<<20, "")})
	first := make(chan response, 1)
	go func() {
		r, _ := send(http.MethodGet, base+"/v1/images/tasks/"+ids[0], "mg-image-tasks", nil)
		first <- r
	}()
	awaitHeldAnswers(t, 20<<20, 41<<20)

	g.vars["answer_memory"] = oneShare("60MiB")
	reloaded := make(chan error, 1)
	go func() { reloaded <- g.reload(answerMemoryCaddyfile) }() // ends once the old config's query has
	time.Sleep(2 * time.Second)                                 // the new config serves, the old one stops accepting

	busy := call(t, http.MethodGet, base+"/v1/images/tasks/"+other, "mg-image-sketchers", nil)
	close(gate)
	if r := <-first; r.status != http.StatusOK {
		t.Errorf("the query held across the reload = %d %.200s", r.status, r.body)
	}
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if code, _ := errorCodeAndShape(busy); busy.status != http.StatusServiceUnavailable || code != "gateway_busy" {
		t.Fatalf("a 40 MB answer while the old config holds 20 MB or more of answer_memory 60 MiB = %d %s, want 503 gateway_busy", busy.status, code)
	}
	if r := call(t, http.MethodGet, base+"/v1/images/tasks/"+other, "mg-image-sketchers", nil); r.status != http.StatusOK {
		t.Fatalf("the same query once the old config's answer was passed on = %d %.200s", r.status, r.body)
	}
	awaitHeldAnswers(t, 0, 0)
}

// TestEditLostForWantOfMemoryIsChargedOnlyToItsOwnAccount: answer_memory 24 MiB, 16 MiB per
// account. A painters client reads its 15 MB answer at 256 KiB/s, within painters' share, for
// minutes. painters' own edit, answered 10 MB, would pass painters' share: it waits 15 s for
// painters' answers to be passed on, then is 502 and charged its estimate (the account's own
// answers took the room). sketchers' edit, answered 10 MB within its share, finds the gateway
// full of another account's answer within its share: after 15 s it is 503 gateway_busy and not
// charged (the loss is the gateway's). Both were made by the provider. (Before, sketchers' edit
// was 502 and charged.)
func TestEditLostForWantOfMemoryIsChargedOnlyToItsOwnAccount(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, "24MiB\n\t\tanswer_memory_per_account 16MiB", "16MiB", "image-async", 1)
	fake.set(ids[0], &heldTask{answer: succeededAnswer(ids[0], 1, 15<<20, "")})
	trickleQuery(t, base, ids[0])
	awaitHeldAnswers(t, 15<<20, 16<<20)
	awaitBalance(t, g, "painters", "4.95", "0")
	fake.answerEditsWith(&heldTask{answer: []byte(`{"created":1,"data":[{"b64_json":"` + strings.Repeat("iVBO", (10<<20)/4) + `"}]}`)})

	edits := fake.edited()
	own := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("image-async", 1, "1024x1024", "auto"))
	if code, _ := errorCodeAndShape(own); own.status != http.StatusBadGateway || code != "invalid_response" {
		t.Errorf("painters' edit past its own share = %d %.200s, want 502 invalid_response", own.status, own.body)
	}
	awaitBalance(t, g, "painters", "4.9", "0")

	other := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-sketchers", imageEditBody("image-async", 1, "1024x1024", "auto"))
	if code, _ := errorCodeAndShape(other); other.status != http.StatusServiceUnavailable || code != "gateway_busy" || other.header.Get("Retry-After") != "1" {
		t.Errorf("sketchers' edit within its share, the gateway full of painters' = %d %.200s, want 503 gateway_busy", other.status, other.body)
	}
	awaitBalance(t, g, "sketchers", "5", "0")
	if made := fake.edited() - edits; made != 2 {
		t.Fatalf("the provider got %d edits, want 2 (both made, neither answer held)", made)
	}
}
