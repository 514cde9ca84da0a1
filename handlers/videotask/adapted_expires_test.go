package videotask

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestAdaptedRunningExpires: a DashScope task that its provider reports RUNNING at every read
// (stuck at the provider), created with execution_expires_after 3600, reads running within it
// and expired (task_expired, its record finished) past it. No adaptor can send the field, so the
// gateway keeps it (docs/api.md: expired is "Not finished within execution_expires_after").
func TestAdaptedRunningExpires(t *testing.T) {
	h := newDashHandler(t, &dashUpstream{status: "RUNNING"})
	clock := time.Unix(1_800_000_000, 0)
	h.Now = clockAt(&clock)
	w := serve(h, "POST", createPath, `{"model":"wan","execution_expires_after":3600,"content":[{"type":"text","text":"hi"}]}`)
	if w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	id := decode(t, w)["id"].(string)
	if got := decode(t, serve(h, "GET", createPath+"/"+id, "")); got["status"] != StatusRunning {
		t.Fatalf("within execution_expires_after: %v", got)
	}
	clock = clock.Add(3 * time.Hour)
	got := decode(t, serve(h, "GET", createPath+"/"+id, ""))
	if got["status"] != StatusExpired {
		t.Fatalf("two hours past its execution_expires_after (3600 s) the task reads %v; want expired", got["status"])
	}
	if code := got["error"].(map[string]any)["code"]; code != "task_expired" {
		t.Fatalf("expired with code %v; want task_expired", code)
	}
	if rec, err := h.Store.Task(t.Context(), id); err != nil || !rec.Finished || rec.Status != StatusExpired {
		t.Fatalf("record after the expiry: %+v, %v; want finished, expired", rec, err)
	}
}

// TestAdaptedExpiryRacesClientPolls: past their execution_expires_after, tasks that DashScope
// still reports RUNNING are expired by the watcher's poll on one instance and clients' polls
// through another, racing: each is finished once, its slot given back and its hold released
// once, whoever wins. Run on Redis (two clients of one server) and Badger.
func TestAdaptedExpiryRacesClientPolls(t *testing.T) {
	for name, open := range twoInstanceStores {
		t.Run(name, func(t *testing.T) {
			var made atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					fmt.Fprintf(w, `{"output":{"task_id":"ds-%d","task_status":"PENDING"},"request_id":"r"}`, made.Add(1))
					return
				}
				io.WriteString(w, `{"output":{"task_id":"ds","task_status":"RUNNING"},"request_id":"r"}`)
			}))
			t.Cleanup(srv.Close)
			base, _ := url.Parse(srv.URL + "/api/v1")
			clock := testclock.New(time.Unix(1_800_000_000, 0))
			instance := func(store storage.Store) *Handler {
				cat, err := providers.NewCatalog([]*providers.Provider{{Name: "wan", BaseURL: base, APIKey: "k", Protocol: adaptor.DashScope, Models: []string{"m"}}})
				if err != nil {
					t.Fatal(err)
				}
				meter := accounting.NewMeter(store, time.Hour, zap.NewNop())
				t.Cleanup(meter.Close)
				return &Handler{Catalog: cat, Store: store, Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop(), Now: clock.Now,
					Accounting: &accounting.Accountant{Store: store, Meter: meter, Prices: unitPrice(t), Now: clock.Now}}
			}
			storeA, storeB := open(t)
			a, b := instance(storeA), instance(storeB)
			w := &Watcher{Tasks: a, Interval: time.Hour, Owner: "a"}
			w.init()
			w.ownTickAndScan(context.Background())
			a.Watcher = w
			const n = 4
			quota := int64(10)
			var ids []string
			for range n {
				r := serveAs(a, http.MethodPost, createPath, `{"model":"m","execution_expires_after":3600,"content":[{"type":"text","text":"hi"}]}`,
					storage.Limits{Quota: &quota, MaxActiveTasks: n})
				id, _ := decode(t, r)["id"].(string)
				if r.Code != http.StatusOK || id == "" {
					t.Fatalf("create: %d %s", r.Code, r.Body)
				}
				ids = append(ids, id)
			}
			if active, used := counters(t, storeA); active != n || used != n {
				t.Fatalf("active %d, used %d after the creates; want %d and %d", active, used, n, n)
			}
			for range 24 { // two hours on, the watcher renewing its leases as its ticks would
				clock.Advance(w.Interval / 12)
				w.ownTick(context.Background())
			}
			var wg sync.WaitGroup
			wg.Go(func() { w.poll(context.Background(), ids) })
			for _, id := range ids {
				for range 2 {
					wg.Go(func() {
						if r := serve(b, http.MethodGet, createPath+"/"+id, ""); r.Code != http.StatusOK {
							t.Errorf("client's query of %s: %d %s", id, r.Code, r.Body)
						}
					})
				}
			}
			wg.Wait()
			for _, id := range ids {
				rec, err := storeA.Task(context.Background(), id)
				if err != nil || !rec.Finished || rec.Status != StatusExpired {
					t.Fatalf("record %s: %s finished %v, %v; want expired and finished", id, rec.Status, rec.Finished, err)
				}
			}
			if active, used := counters(t, storeA); active != 0 || used != 0 {
				t.Fatalf("active %d, used %d after the expiries; want 0 and 0 (each slot and hold given back once)", active, used)
			}
		})
	}
}
