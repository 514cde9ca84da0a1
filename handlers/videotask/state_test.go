package videotask

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/storage"
)

// taskUpstream is a fake Ark task API with one task whose status the test sets. Reads can be
// held (hold) to line up races; cancels turn a queued task cancelled, refuse a running one and
// delete a finished one.
type taskUpstream struct {
	*fakeUpstream
	mu      sync.Mutex
	status  string
	gone    bool
	hold    chan struct{} // when set, the next read waits on it
	held    chan struct{} // closed when a held read has arrived
	deletes atomic.Int64
}

func newTaskUpstream(t *testing.T, status string) *taskUpstream {
	u := &taskUpstream{status: status}
	u.fakeUpstream = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			io.WriteString(w, `{"id":"cgt-race"}`)
			return
		case http.MethodDelete:
			u.deletes.Add(1)
			u.mu.Lock()
			defer u.mu.Unlock()
			switch {
			case u.gone:
				w.WriteHeader(404)
			case u.status == "queued":
				u.status = "cancelled"
			case u.status == "running":
				w.WriteHeader(409)
				io.WriteString(w, `{"error":{"code":"InvalidAction.TaskRunning","message":"running"}}`)
				return
			default:
				u.gone = true
			}
			io.WriteString(w, `{}`)
			return
		}
		u.mu.Lock()
		hold, held, status, gone := u.hold, u.held, u.status, u.gone
		u.hold = nil
		u.mu.Unlock()
		if hold != nil {
			close(held)
			<-hold
		}
		if gone {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":"NotFound","message":"no such task"}}`)
			return
		}
		io.WriteString(w, `{"id":"cgt-race","model":"m","status":"`+status+`","content":{"video_url":"https://cdn.example.com/v.mp4"},"created_at":1,"updated_at":2}`)
	})
	return u
}

func (u *taskUpstream) set(status string) { u.mu.Lock(); u.status = status; u.mu.Unlock() }

// holdNextRead makes the next read wait until the returned release is called; arrived is closed
// when that read has reached the upstream.
func (u *taskUpstream) holdNextRead() (arrived <-chan struct{}, release func()) {
	hold, held := make(chan struct{}), make(chan struct{})
	u.mu.Lock()
	u.hold, u.held = hold, held
	u.mu.Unlock()
	return held, func() { close(hold) }
}

// accountedHandler is a handler with accounting (model m priced 1 per task, the key's quota 10)
// and a created task cgt-race holding one slot and a hold of 1.
func accountedHandler(t *testing.T, u *taskUpstream) (*Handler, *accounting.Accountant) {
	t.Helper()
	h := newHandler(t, u.URL, nil)
	h.Client.Timeout = 10 * time.Second
	h.RefreshInterval = time.Nanosecond
	meter := accounting.NewMeter(h.Store, time.Hour, zap.NewNop())
	t.Cleanup(meter.Close)
	acct := &accounting.Accountant{Store: h.Store, Meter: meter, Prices: unitPrice(t)}
	h.Accounting = acct
	quota := int64(10)
	r := serveAs(h, "POST", createPath, createBody, storage.Limits{Quota: &quota, MaxActiveTasks: 5})
	if r.Code != 200 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	return h, acct
}

func counters(t *testing.T, s storage.Store) (active, quota int64) {
	t.Helper()
	var err error
	if active, err = s.Counter(context.Background(), accounting.ActiveCounter("k1")); err != nil {
		t.Fatal(err)
	}
	b, err := s.Balance(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	return active, -b.Amount / billing.Micro // held and charged, in units: the quota's budget used
}

// unitPrice prices model m at 1 per task: the former default cost of 1 that a quota counted.
func unitPrice(t *testing.T) *billing.Table {
	t.Helper()
	prices, err := billing.NewTable("USD", []billing.Price{{Model: "m", Request: billing.Micro}})
	if err != nil {
		t.Fatal(err)
	}
	return prices
}

// TestCancelAgainstRefresh: a watcher refresh reads "queued" just before a client cancels, and
// stores its stale read after the cancel was recorded. The task must stay cancelled, and its slot
// and quota be given back exactly once.
func TestCancelAgainstRefresh(t *testing.T) {
	u := newTaskUpstream(t, "queued")
	h, _ := accountedHandler(t, u)
	rec, _ := h.Store.Task(context.Background(), "cgt-race")

	arrived, release := u.holdNextRead()
	stale := make(chan storage.Task, 1)
	go func() {
		got, _ := h.refresh(context.Background(), rec)
		stale <- got
	}()
	<-arrived // the watcher's read is under way, with the task still queued
	u.mu.Lock()
	u.hold = nil // the cancel's own reads are not held
	u.mu.Unlock()
	if w := serve(h, "DELETE", createPath+"/cgt-race", ""); w.Code != 200 {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	release()
	<-stale

	got, err := h.Store.Task(context.Background(), "cgt-race")
	if err != nil || got.Status != StatusCancelled || !got.Finished {
		t.Fatalf("after cancel and a stale refresh: %+v, %v; want cancelled and finished", got, err)
	}
	if active, quota := counters(t, h.Store); active != 0 || quota != 0 {
		t.Fatalf("active %d, quota used %d; want 0 and 0 (released and refunded once)", active, quota)
	}
}

// TestCancelOfFinishedTaskIsNotRefunded: the record still says queued, but the upstream has
// finished the task: the cancel must not record cancelled, and a succeeded task keeps its charge.
func TestCancelOfFinishedTaskIsNotRefunded(t *testing.T) {
	u := newTaskUpstream(t, "queued")
	h, _ := accountedHandler(t, u)
	u.set("succeeded")
	if w := serve(h, "DELETE", createPath+"/cgt-race", ""); w.Code != 200 {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	if _, err := h.Store.Task(context.Background(), "cgt-race"); err == nil {
		t.Fatal("the record of a finished task deleted upstream was kept")
	}
	if active, quota := counters(t, h.Store); active != 0 || quota != 1 {
		t.Fatalf("active %d, quota used %d; want the slot back and the charge kept", active, quota)
	}
}

// TestCancelOfRunningTaskChangesNothing: the upstream refuses; nothing is recorded or refunded.
func TestCancelOfRunningTaskChangesNothing(t *testing.T) {
	u := newTaskUpstream(t, "queued")
	h, _ := accountedHandler(t, u)
	u.set("running")
	if w := serve(h, "DELETE", createPath+"/cgt-race", ""); w.Code != 409 {
		t.Fatalf("cancel of a running task: %d %s", w.Code, w.Body)
	}
	got, _ := h.Store.Task(context.Background(), "cgt-race")
	if got.Status != StatusRunning || got.Finished {
		t.Fatalf("record = %+v", got)
	}
	if active, quota := counters(t, h.Store); active != 1 || quota != 1 {
		t.Fatalf("active %d, quota %d; want both still held", active, quota)
	}
}

// TestFinishReleasesOnce: many refreshers see one task fail at once; the slot and the refund are
// given back once, not once per refresher.
func TestFinishReleasesOnce(t *testing.T) {
	u := newTaskUpstream(t, "queued")
	h, _ := accountedHandler(t, u)
	u.set("failed")
	rec, _ := h.Store.Task(context.Background(), "cgt-race")
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.refresh(context.Background(), rec); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if active, quota := counters(t, h.Store); active != 0 || quota != 0 {
		t.Fatalf("active %d, quota %d after 12 refreshers saw the failure; want 0 and 0", active, quota)
	}
}

// TestVanishedTaskIsFinished: a task the upstream answers 404 for, or whose provider left the
// config, is finished (slot released, refunded) and no longer watched.
func TestVanishedTaskIsFinished(t *testing.T) {
	t.Run("upstream 404", func(t *testing.T) {
		u := newTaskUpstream(t, "queued")
		h, _ := accountedHandler(t, u)
		u.mu.Lock()
		u.gone = true
		u.mu.Unlock()
		if w := serve(h, "GET", createPath+"/cgt-race", ""); w.Code != 400 {
			t.Fatalf("query of a vanished task: %d %s", w.Code, w.Body)
		}
		assertFinished(t, h.Store)
	})
	t.Run("provider left the config", func(t *testing.T) {
		u := newTaskUpstream(t, "queued")
		h, _ := accountedHandler(t, u)
		p, _ := h.Catalog.ProviderFor("m")
		other, err := providers.NewCatalog([]*providers.Provider{{Name: "other", BaseURL: p.BaseURL, Models: []string{"x"}}})
		if err != nil {
			t.Fatal(err)
		}
		h.Catalog = other
		if w := serve(h, "GET", createPath+"/cgt-race", ""); w.Code != 200 {
			t.Fatalf("query: %d %s", w.Code, w.Body)
		}
		assertFinished(t, h.Store)
	})
}

func assertFinished(t *testing.T, s storage.Store) {
	t.Helper()
	got, err := s.Task(context.Background(), "cgt-race")
	if err != nil || !got.Finished || got.Unfinished() {
		t.Fatalf("record = %+v, %v; want finished", got, err)
	}
	open := 0
	if err := s.UnfinishedTasks(context.Background(), func(string) bool { open++; return true }); err != nil || open != 0 {
		t.Fatalf("%d tasks still watched (%v)", open, err)
	}
	if active, quota := counters(t, s); active != 0 || quota != 0 {
		t.Fatalf("active %d, quota %d; want the slot released and the cost refunded", active, quota)
	}
}

// TestGoneAgainstRefresh: a receiver answers 410 while a refresh is reading the upstream; the
// refresh, stored after, must not bring the callback back nor queue a new delivery.
func TestGoneAgainstRefresh(t *testing.T) {
	u := newTaskUpstream(t, "queued")
	h := newHandler(t, u.URL, nil)
	h.Client.Timeout = 10 * time.Second
	key, _ := callbacks.ParseSecret(callbacks.NewSecret())
	h.Callbacks = &callbacks.Outbox{Store: h.Store, Key: key, Client: callbacks.NewClient(true), Logger: zap.NewNop()}
	body := strings.Replace(createBody, `"model"`, `"callback_url":"https://hooks.example.com/x","model"`, 1)
	if w := serve(h, "POST", createPath, body); w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	rec, _ := h.Store.Task(context.Background(), "cgt-race")
	if rec.CallbackURL == "" {
		t.Fatal("callback_url not recorded")
	}
	u.set("running")
	arrived, release := u.holdNextRead()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.refresh(context.Background(), rec)
	}()
	<-arrived
	h.CallbackGone(context.Background(), "cgt-race") // the receiver said 410 meanwhile
	release()
	<-done

	got, _ := h.Store.Task(context.Background(), "cgt-race")
	if got.CallbackURL != "" || !got.CallbackGone {
		t.Fatalf("after 410 and a refresh: callback %q gone %v; want stopped", got.CallbackURL, got.CallbackGone)
	}
	if got.Status != StatusRunning {
		t.Fatalf("the refresh's status was lost: %q", got.Status)
	}
	if n, err := h.Store.PendingEvents(context.Background()); err != nil || n != 0 {
		t.Fatalf("%d callbacks queued after the receiver answered 410 (%v)", n, err)
	}
}

// serveAs serves a request of key k1 of account acme with the given limits.
func serveAs(h *Handler, method, path, body string, limits storage.Limits) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme", Limits: limits}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestWatcherHonoursShardLease: while another gateway's watcher holds the lease of a task's
// shard, this watcher does not read the task from the upstream; once the lease is released and
// this watcher takes the shard, it does.
func TestWatcherHonoursShardLease(t *testing.T) {
	u := newTaskUpstream(t, "queued")
	h := newHandler(t, u.URL, nil)
	h.Client.Timeout = 10 * time.Second
	if w := serve(h, "POST", createPath, createBody); w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	w := &Watcher{Tasks: h, Interval: time.Hour}
	w.init()
	ctx := context.Background()
	lease := w.shardLease(storage.TaskShard("cgt-race", w.Shards))
	if ok, err := h.Store.AcquireLease(ctx, lease, "other-gateway", h.now(), time.Minute); err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	w.ownTickAndScan(ctx)
	before := u.calls.Load()
	w.poll(ctx, []string{"cgt-race"})
	if n := u.calls.Load() - before; n != 0 {
		t.Fatalf("the watcher read a task whose shard lease another gateway holds (%d reads)", n)
	}
	if err := h.Store.ReleaseLease(ctx, lease, "other-gateway"); err != nil {
		t.Fatal(err)
	}
	w.ownTickAndScan(ctx)
	w.poll(ctx, []string{"cgt-race"})
	if n := u.calls.Load() - before; n != 1 {
		t.Fatalf("after the lease was released: %d reads, want 1", n)
	}
}

// TestActiveTaskRefusalIsNotAccepted: a create past max_active_tasks is charged, then refused
// and refunded before any upstream call; it must end as a refusal (no usage record, counted as
// too_many_active_tasks), not as an accepted request.
func TestActiveTaskRefusalIsNotAccepted(t *testing.T) {
	u := newTaskUpstream(t, "queued")
	h, _ := accountedHandler(t, u) // one task created: its slot is held
	quota := int64(10)
	entry := usage.NewEntry(createPath)
	entry.Authenticated("acme", "k1") // as mediagw_auth does
	r := httptest.NewRequest("POST", createPath, strings.NewReader(createBody))
	r.Header.Set("Content-Type", "application/json")
	ctx := auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme", Limits: storage.Limits{Quota: &quota, MaxActiveTasks: 1}})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(usage.WithEntry(ctx, entry)))
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("create past the limit: %d %s", w.Code, w.Body)
	}
	out := entry.Finish(w.Code, time.Now(), "")
	if out.Accepted || out.Record.Amount != 0 {
		t.Fatalf("refused create: accepted %v, amount %d; want a refusal with nothing charged", out.Accepted, out.Record.Amount)
	}
	if _, quotaUsed := counters(t, h.Store); quotaUsed != 1 {
		t.Fatalf("quota used %d; want 1 (the first task's charge only)", quotaUsed)
	}
}

// A create the upstream accepted (2xx) with an id the gateway cannot use may run there: the client
// gets 502 invalid_response, and its cost stays taken so that the task is not free. Its slot is
// given back, since no record could ever release it. An answer without any id gives both back.
func TestUnusableTaskIDKeepsTheCharge(t *testing.T) {
	for _, tc := range []struct {
		name, answer              string
		wantActive, wantQuotaUsed int64
	}{
		{"an id that is a path", `{"id":"cgt-1/../../files"}`, 0, 1},
		{"no id", `{"ok":true}`, 0, 0},
		{"a numeric id", `{"id":12}`, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, tc.answer) })
			h := newHandler(t, up.URL, nil)
			h.Client.Timeout = 10 * time.Second
			meter := accounting.NewMeter(h.Store, time.Hour, zap.NewNop())
			t.Cleanup(meter.Close)
			h.Accounting = &accounting.Accountant{Store: h.Store, Meter: meter, Prices: unitPrice(t)}
			quota := int64(10)
			w := serveAs(h, "POST", createPath, createBody, storage.Limits{Quota: &quota, MaxActiveTasks: 5})
			if body := decode(t, w); w.Code != 502 || body["code"] != "invalid_response" {
				t.Fatalf("got %d %s, want 502 invalid_response", w.Code, w.Body)
			}
			if active, used := counters(t, h.Store); active != tc.wantActive || used != tc.wantQuotaUsed {
				t.Fatalf("active %d, quota used %d; want %d, %d", active, used, tc.wantActive, tc.wantQuotaUsed)
			}
		})
	}
}

// TestWatcherAndQueryRaceToFinish proves the race the issue names: the watcher's read of a task
// reaches the upstream and sees it failed (or expired), is held there while a client's query
// sees the same and finishes the task, then stores its own finish. Both saw the terminal status;
// the hold is released once (one release entry, the balance back at 0), and the slot given back
// once.
func TestWatcherAndQueryRaceToFinish(t *testing.T) {
	for _, status := range []string{"failed", "expired"} {
		t.Run(status, func(t *testing.T) {
			u := newTaskUpstream(t, "queued")
			h, _ := accountedHandler(t, u)
			rec, _ := h.Store.Task(context.Background(), "cgt-race")
			u.set(status)
			arrived, release := u.holdNextRead()
			watcher := make(chan storage.Task, 1)
			go func() {
				got, _ := h.refresh(context.Background(), rec)
				watcher <- got
			}()
			<-arrived // the watcher has read the terminal status and waits
			if w := serve(h, "GET", createPath+"/cgt-race", ""); w.Code != 200 || decode(t, w)["status"] != status {
				t.Fatalf("the client's query: %d %s", w.Code, w.Body)
			}
			if b, _ := h.Store.Balance(context.Background(), "acme"); b.Held != 0 || b.Amount != 0 {
				t.Fatalf("after the query finished the task: %+v, want the hold released", b)
			}
			release()
			if got := <-watcher; got.Status != status || !got.Finished {
				t.Fatalf("the watcher's view: %+v", got)
			}
			if active, used := counters(t, h.Store); active != 0 || used != 0 {
				t.Fatalf("active %d, used %d after both finished the task; want 0 and 0 (released once)", active, used)
			}
			entries, _, err := h.Store.LedgerPage(context.Background(), "acme", "", 10)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, e := range entries {
				kinds[e.Kind]++
			}
			if kinds[storage.EntryHold] != 1 || kinds[storage.EntryRelease] != 1 || len(entries) != 2 {
				t.Fatalf("ledger %v, want one hold and one release", kinds)
			}
		})
	}
}
