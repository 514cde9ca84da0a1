package videotask

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/testclock"
)

// A watcher of concurrency 2 lets one poll at most read an upstream (upstreamShare). While a
// poll waits on a DashScope upstream whose reads hang, the next poll, of another task of that
// upstream and one of a healthy upstream, reads the healthy one's task at once (succeeded) and
// leaves the other to a later poll, instead of waiting behind a second hanging read.
func TestWatcherSlowUpstreamHoldsItsShareOnly(t *testing.T) {
	release := make(chan struct{})
	var slowReads atomic.Int64
	dash := func(hang bool) *url.URL {
		var made atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				fmt.Fprintf(w, `{"output":{"task_id":"ds-%d","task_status":"PENDING"},"request_id":"r"}`, made.Add(1))
				return
			}
			if hang {
				slowReads.Add(1)
				<-release
			}
			io.WriteString(w, `{"output":{"task_id":"ds","task_status":"SUCCEEDED","video_url":"https://v.example/x.mp4"},"request_id":"r"}`)
		}))
		t.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL + "/api/v1")
		return u
	}
	slow, fast := dash(true), dash(false)
	t.Cleanup(func() { close(release) }) // before the servers close
	cat, err := providers.NewCatalog([]*providers.Provider{
		{Name: "slow", BaseURL: slow, APIKey: "k", Protocol: adaptor.DashScope, Models: []string{"slow"}},
		{Name: "fast", BaseURL: fast, APIKey: "k", Protocol: adaptor.DashScope, Models: []string{"fast"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	h := &Handler{Catalog: cat, Store: openBadger(t), Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop(), Now: clock.Now}
	w := &Watcher{Tasks: h, Interval: time.Hour, Concurrency: 2, Owner: "a"}
	w.init()
	w.ownTickAndScan(context.Background())
	h.Watcher = w
	create := func(model string) string {
		r := serve(h, http.MethodPost, createPath, `{"model":"`+model+`","content":[{"type":"text","text":"hi"}]}`)
		id, _ := decode(t, r)["id"].(string)
		if r.Code != http.StatusOK || id == "" {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		return id
	}
	slow1, slow2, fast1 := create("slow"), create("slow"), create("fast")
	for range 7 {
		clock.Advance(w.Interval / 12)
		w.ownTick(context.Background())
	}
	first := make(chan int)
	go func() { first <- w.poll(context.Background(), []string{slow1}) }()
	for deadline := time.Now().Add(5 * time.Second); slowReads.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first poll did not read the slow upstream")
		}
	}
	second := make(chan int)
	go func() { second <- w.poll(context.Background(), []string{slow2, fast1}) }()
	select {
	case calls := <-second:
		if calls != 1 {
			t.Fatalf("the second poll made %d upstream calls; want 1 (the healthy upstream's)", calls)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second poll waited on the slow upstream, past its share")
	}
	if n := slowReads.Load(); n != 1 {
		t.Fatalf("%d reads reached the slow upstream; want 1 (its share)", n)
	}
	if rec, err := h.Store.Task(context.Background(), fast1); err != nil || rec.Status != StatusSucceeded {
		t.Fatalf("the healthy upstream's task: %s, %v; want succeeded", rec.Status, err)
	}
	release <- struct{}{} // the first poll's read answers
	<-first
}

// The watcher's reads in flight are bounded watcher-wide by its Concurrency, and shared: an
// upstream's share shrinks as more upstreams have work, and the slow upstreams that hold reads
// leave one to a healthy upstream, which gets it back each time its read ends.
func TestWatcherReadsInFlightShareTheConcurrency(t *testing.T) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	w := &Watcher{Tasks: &Handler{Logger: zap.NewNop(), Now: clock.Now}, Interval: time.Second, Concurrency: 8}
	w.init()
	take := func(u *providers.Upstream) int {
		n := 0
		for n < 20 && w.startUpstream(u) {
			n++
		}
		return n
	}
	slow1, slow2, slow3, healthy := &providers.Upstream{Name: "slow1"}, &providers.Upstream{Name: "slow2"},
		&providers.Upstream{Name: "slow3"}, &providers.Upstream{Name: "healthy"}
	if n := take(slow1); n != 4 {
		t.Fatalf("one upstream with work took %d reads of 8; want 4 (a newcomer has room)", n)
	}
	if n := take(slow2); n != 2 {
		t.Fatalf("a second upstream took %d reads; want 2 (8 / 3)", n)
	}
	if n := take(healthy); n != 1 {
		t.Fatalf("the healthy upstream took %d reads beside two slow ones; want 1", n)
	}
	if take(slow1)+take(slow2) != 0 {
		t.Fatal("the slow upstreams took more reads past their shares")
	}
	for range 5 {
		w.doneUpstream(healthy)
		if take(slow1)+take(slow2) != 0 {
			t.Fatal("the slow upstreams took the read the healthy upstream gave back")
		}
		if n := take(healthy); n != 1 {
			t.Fatalf("the healthy upstream took %d reads after its read ended; want 1", n)
		}
	}
	// Each upstream has a read of its own, however many hang: eight more hanging upstreams
	// (one provider's keys in one outage) leave the healthy one its read.
	for i := range 8 {
		if n := take(&providers.Upstream{Name: "hanging" + strconv.Itoa(i)}); n != 1 {
			t.Fatalf("hanging upstream %d took %d reads; want its first only", i, n)
		}
	}
	w.doneUpstream(healthy)
	if n := take(healthy); n != 1 {
		t.Fatalf("the healthy upstream took %d reads beside eleven hanging upstreams; want 1", n)
	}
	if n := take(slow1) + take(slow2) + take(slow3); n != 1 {
		t.Fatalf("the slow upstreams took %d more reads; want slow3's first only", n)
	}
	if upstreams := len(w.upstreamReads); w.readsInFlight > w.Concurrency+upstreams {
		t.Fatalf("%d reads in flight of %d upstreams; the concurrency is %d", w.readsInFlight, upstreams, w.Concurrency)
	}
}
