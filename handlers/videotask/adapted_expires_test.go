package videotask

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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
// still reports unfinished are expired by the watcher's poll on one instance and clients' polls
// through another, racing: each is finished once and its slot given back once, whoever wins. The
// provider may still make a task it reports RUNNING, and bill it: each is charged its estimate
// (1), once. One it reports PENDING (queued, not started) is cancelled there by the winner of
// the change alone, once per task (before, every racer sent the cancel before its
// compare-and-set), and released when the cancel is confirmed; charged its estimate when the
// provider refuses the cancel (it may run it). Run on Redis (two clients of one server) and
// Badger.
func TestAdaptedExpiryRacesClientPolls(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		cancelOK     bool
		used         int64 // units charged, of the 4 tasks
	}{
		{"running", "RUNNING", false, 4},
		{"queued, cancelled", "PENDING", true, 0},
		{"queued, cancel refused", "PENDING", false, 4},
	} {
		for name, open := range twoInstanceStores {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				testAdaptedExpiryRace(t, open, tc.status, tc.cancelOK, tc.used)
			})
		}
	}
}

// testAdaptedExpiryRace is one case of TestAdaptedExpiryRacesClientPolls.
func testAdaptedExpiryRace(t *testing.T, open func(*testing.T) (storage.Store, storage.Store), status string, cancelOK bool, wantUsed int64) {
	var made atomic.Int64
	var mu sync.Mutex
	cancels := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
			mu.Lock()
			cancels[r.URL.Path]++
			mu.Unlock()
			if !cancelOK {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"code":"UnsupportedOperation","message":"the task is running","request_id":"r"}`)
				return
			}
			io.WriteString(w, `{"request_id":"r"}`)
		case r.Method == http.MethodPost:
			fmt.Fprintf(w, `{"output":{"task_id":"ds-%d","task_status":"PENDING"},"request_id":"r"}`, made.Add(1))
		default:
			fmt.Fprintf(w, `{"output":{"task_id":"ds","task_status":%q},"request_id":"r"}`, status)
		}
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
	if active, used := counters(t, storeA); active != 0 || used != wantUsed {
		t.Fatalf("active %d, used %d after the expiries of tasks reported %s; want 0 and %d (each slot given back, and each hold ended, once)", active, used, status, wantUsed)
	}
	// The ledger sums to the balance, entry by entry.
	var sum int64
	for after := ""; ; {
		entries, next, err := storeA.LedgerPage(context.Background(), "acme", after, storage.MaxLedgerPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if sum += e.Amount; e.BalanceAfter != sum {
				t.Fatalf("ledger entry %+v: balance after %d, the entries before it sum to %d", e, e.BalanceAfter, sum)
			}
		}
		if after = next; next == "" {
			break
		}
	}
	if b, err := storeA.Balance(context.Background(), "acme"); err != nil || b.Amount != sum {
		t.Fatalf("balance %+v, %v; the ledger sums to %d", b, err, sum)
	}
	mu.Lock()
	defer mu.Unlock()
	want := 0
	if status == "PENDING" {
		want = 1
	}
	for i := 1; i <= n; i++ {
		if got := cancels[fmt.Sprintf("/api/v1/tasks/ds-%d/cancel", i)]; got != want {
			t.Errorf("ds-%d, reported %s, got %d cancels (all: %v); want %d, from the winner of its expiry", i, status, got, cancels, want)
		}
	}
}
