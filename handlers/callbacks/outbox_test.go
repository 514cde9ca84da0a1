package callbacks

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

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/storage"
)

// TestTwoOutboxesNeverDeliverTheSameEventAtOnce runs two outboxes on one store, as the old and
// the new config do during a reload, with a receiver that holds each delivery for a while.
func TestTwoOutboxesNeverDeliverTheSameEventAtOnce(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var inside, most, deliveries atomic.Int64
	var ids sync.Map
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inside.Add(1)
		defer inside.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		deliveries.Add(1)
		ids.Store(r.Header.Get("webhook-id"), true)
		time.Sleep(300 * time.Millisecond)
	}))
	defer receiver.Close()

	key, _ := ParseSecret(NewSecret())
	newOutbox := func() *Outbox {
		return &Outbox{Store: store, Key: key, Client: NewClient(true), Logger: zap.NewNop()}
	}
	a, b := newOutbox(), newOutbox()
	if err := a.Enqueue(context.Background(), Event{ID: EventID("t1", "running"), TaskID: "t1", Account: "x", URL: receiver.URL, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// The same change observed twice is queued once.
	b.Enqueue(context.Background(), Event{ID: EventID("t1", "running"), TaskID: "t1", Account: "x", URL: receiver.URL, Body: []byte(`{}`)})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, o := range []*Outbox{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); o.Run(stop) }()
	}
	deadline := time.Now().Add(30 * time.Second) // a generous wait: it ends as soon as the condition holds
	for deliveries.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // room for a second, wrongful delivery
	close(stop)
	wg.Wait()
	if most.Load() != 1 || deliveries.Load() != 1 {
		t.Fatalf("%d deliveries, at most %d at once; want exactly 1", deliveries.Load(), most.Load())
	}
	left, err := store.PendingEvents(context.Background())
	if err != nil || left != 0 {
		t.Fatalf("%d events left in the outbox after a 2xx", left)
	}
}

// TestCallbackURLsStayOutOfLogs gives up on a receiver that cannot be reached, whose URL carries
// a token, and checks the log lines.
func TestCallbackURLsStayOutOfLogs(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	core, logs := observer.New(zap.DebugLevel)
	key, _ := ParseSecret(NewSecret())
	o := &Outbox{Store: store, Key: key, Client: NewClient(true), Schedule: []time.Duration{10 * time.Millisecond}, Logger: zap.New(core)}
	url := "http://127.0.0.1:1/hook?token=client-secret-token"
	o.Enqueue(context.Background(), Event{ID: "msg_1", TaskID: "t1", Account: "x", URL: url, Body: []byte(`{}`)})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { o.Run(stop); close(done) }()
	deadline := time.Now().Add(30 * time.Second) // a generous wait: it ends as soon as the condition holds
	for logs.FilterMessageSnippet("given up").Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	<-done
	if logs.FilterMessageSnippet("given up").Len() != 1 {
		t.Fatalf("no give-up line; logs: %v", logs.All())
	}
	for _, entry := range logs.All() {
		if line := fmt.Sprint(entry.Message, entry.ContextMap()); strings.Contains(line, "client-secret-token") {
			t.Fatalf("a log line carries the callback URL: %s", line)
		}
	}
}

// TestSilentReceiverDoesNotDelayOtherAccounts: one account floods the outbox with events for a
// receiver that never answers; another account's event, queued after them all, still arrives
// while the flood's attempts hang.
func TestSilentReceiverDoesNotDelayOtherAccounts(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	release := make(chan struct{})
	var hanging atomic.Int64
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hanging.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(release)
	arrived := make(chan time.Time, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- time.Now():
		default:
		}
	}))
	defer fast.Close()

	key, _ := ParseSecret(NewSecret())
	o := &Outbox{Store: store, Key: key, Client: NewClient(true), AttemptTimeout: 30 * time.Second, Logger: zap.NewNop()}
	ctx := context.Background()
	for i := range 200 {
		if err := o.Enqueue(ctx, Event{ID: fmt.Sprint("flood", i), TaskID: fmt.Sprint("t", i), Account: "flooder", URL: silent.URL, Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Enqueue(ctx, Event{ID: "victim", TaskID: "v", Account: "victim", URL: fast.URL, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	start := time.Now()
	go func() { o.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	select {
	case at := <-arrived:
		// The flood's attempts hang for 30 s; the victim must not wait for any of them.
		if waited := at.Sub(start); waited > 20*time.Second {
			t.Fatalf("the other account's callback waited %v", waited)
		}
	case <-time.After(25 * time.Second):
		t.Fatalf("the other account's callback did not arrive while %d flood attempts hung", hanging.Load())
	}
	if n := hanging.Load(); n > int64(DefaultPerHost) {
		t.Fatalf("%d simultaneous attempts to one host, want at most %d", n, DefaultPerHost)
	}
}

// TestPendingGaugeFallsToZero: mediagw_callback_outbox_pending is counted while a delivery is
// under way (1), and counted again once the last delivery emptied the outbox, though nothing
// else wakes the outbox for a minute.
func TestPendingGaugeFallsToZero(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg := prometheus.NewPedanticRegistry()
	if err := metrics.Register(reg, true); err != nil {
		t.Fatal(err)
	}
	pending := func() float64 {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "mediagw_callback_outbox_pending" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("mediagw_callback_outbox_pending is not served")
		return 0
	}
	var delivered atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // the outbox counts the pending event meanwhile
		delivered.Add(1)
	}))
	defer receiver.Close()
	key, _ := ParseSecret(NewSecret())
	o := &Outbox{Store: store, Key: key, Client: NewClient(true), Logger: zap.NewNop()}
	if err := o.Enqueue(context.Background(), Event{ID: "msg_gauge", TaskID: "t1", Account: "x", URL: receiver.URL, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { o.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()

	sawOne := false
	deadline := time.Now().Add(20 * time.Second)
	for delivered.Load() == 0 && time.Now().Before(deadline) {
		sawOne = sawOne || pending() == 1
		time.Sleep(10 * time.Millisecond)
	}
	if delivered.Load() != 1 || !sawOne {
		t.Fatalf("delivered %d, gauge seen at 1: %v", delivered.Load(), sawOne)
	}
	for pending() != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := pending(); got != 0 {
		t.Fatalf("mediagw_callback_outbox_pending = %v after the only event was delivered", got)
	}
}
