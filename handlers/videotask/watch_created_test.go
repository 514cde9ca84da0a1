package videotask

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/storage"
)

// readCountingStore counts the task records the watcher reads in batches.
type readCountingStore struct {
	storage.Store
	read atomic.Int64
}

func (s *readCountingStore) ReadTasks(ctx context.Context, ids []string) ([]storage.Task, error) {
	s.read.Add(int64(len(ids)))
	return s.Store.ReadTasks(ctx, ids)
}

// newCreatedWatcher is a handler whose creates are watched by a watcher that holds every shard
// (its polls are made by the test), over a store that counts the records read.
func newCreatedWatcher(t *testing.T, up *simUpstream) (*Handler, *Watcher, *readCountingStore) {
	t.Helper()
	store := &readCountingStore{Store: openBadger(t)}
	h := newHandler(t, up.URL, store)
	h.Client.Timeout = 10 * time.Second
	w := &Watcher{Tasks: h, Interval: time.Hour}
	w.init()
	w.ownTickAndScan(context.Background())
	h.Watcher = w
	return h, w, store
}

// The first poll of tasks created through this instance starts from the records the creates
// stored: it reads none from the store, and stores the upstream's answer (running) in one
// write each. Their next poll starts from the records it wrote: it reads none either.
func TestFirstPollStartsFromTheCreatedRecords(t *testing.T) {
	up := newSimUpstream(t, 0, time.Hour, true) // running at once
	h, w, store := newCreatedWatcher(t, up)
	ctx := context.Background()
	ids := createTasks(t, h, 5)
	if calls := w.poll(ctx, ids); calls != 1 {
		t.Fatalf("first poll made %d upstream calls, want 1", calls)
	}
	if n := store.read.Load(); n != 0 {
		t.Fatalf("first poll read %d records from the store, want 0", n)
	}
	for _, id := range ids {
		rec, err := h.Store.Task(ctx, id)
		if err != nil || rec.Version != 2 || rec.Status != StatusRunning || len(rec.Result) == 0 || rec.RefreshedAt == 0 {
			t.Fatalf("record after the first poll: %+v, %v; want the answer stored (version 2)", rec, err)
		}
	}
	// Recently refreshed (the records it wrote say so): not polled upstream again.
	if calls := w.poll(ctx, ids); calls != 0 {
		t.Fatalf("second poll made %d upstream calls, want 0 (refreshed just now)", calls)
	}
	if n := store.read.Load(); n != 0 {
		t.Fatalf("second poll read %d records from the store, want 0", n)
	}
}

// A record changed between its create and the first poll is not overwritten from the record
// the create stored: the write's compare-and-set fails, and the change is made again on the
// current record. A task that fails upstream then gives its slot and its cost back once.
func TestFirstPollOfAChangedRecord(t *testing.T) {
	up := newSimUpstream(t, 0, 0, true)
	h, w, _ := newCreatedWatcher(t, up)
	ctx := context.Background()
	const n = 4
	ids := createFailingTasks(t, h, n)
	changed := ids[:2]
	stopCallbacks(t, h, changed)
	w.poll(ctx, ids)
	for i, id := range ids {
		rec, err := h.Store.Task(ctx, id)
		if err != nil || !rec.Finished || rec.Status != StatusFailed {
			t.Fatalf("record %+v, %v; want failed and finished", rec, err)
		}
		wantGone, wantVersion := false, int64(3) // created, finished, its effects done
		if i < len(changed) {
			wantGone, wantVersion = true, 4 // created, changed, finished, its effects done
		}
		if rec.CallbackGone != wantGone || rec.Version != wantVersion || rec.Effects != 0 {
			t.Fatalf("record %+v: the change made after the create is lost, or the record was written more than once", rec)
		}
	}
	if active, used := counters(t, h.Store); active != 0 || used != 0 {
		t.Fatalf("active %d, quota used %d after the failures; want 0 and 0", active, used)
	}
}

// A client's poll between a create and the watcher's first poll is seen by that poll: the
// task, read just now, is not read again before its Interval.
func TestFirstPollAfterAClientPoll(t *testing.T) {
	up := newSimUpstream(t, time.Hour, time.Hour, true)
	h, w, store := newCreatedWatcher(t, up)
	ctx := context.Background()
	ids := createTasks(t, h, 2)
	if r := serve(h, http.MethodGet, createPath+"/"+ids[0], ""); r.Code != http.StatusOK {
		t.Fatalf("query: %d %s", r.Code, r.Body)
	}
	if calls := w.poll(ctx, ids); calls != 1 {
		t.Fatalf("first poll made %d upstream calls, want 1 (the task not polled by the client)", calls)
	}
	if n := store.read.Load(); n != 1 {
		t.Fatalf("first poll read %d records from the store, want 1 (the one the client's poll changed)", n)
	}
	up.mu.Lock()
	polled := up.readsPerTask[ids[0]]
	up.mu.Unlock()
	if polled != 1 {
		t.Fatalf("the task a client polled was read upstream %d times, want once (the client's)", polled)
	}
}

// stopCallbacks changes the records of ids as a receiver's 410 does, through the store (as
// another instance would, or a client's request racing with the watcher).
func stopCallbacks(t *testing.T, h *Handler, ids []string) {
	t.Helper()
	for _, id := range ids {
		if _, err := storage.UpdateTask(context.Background(), h.Store, id, func(t *storage.Task) error {
			t.CallbackURL, t.CallbackGone = "", true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// A task that no read has answered yet and that its upstream still has queued is not written by
// the watcher's reads: its record already answers queued (recordJSON). The first reads store
// nothing and read nothing from the store; the list shows the task queued; a client's own read
// asks the upstream and stores its answer. A task with a callback URL is written at its first
// read, which sends the queued callback.
func TestFirstReadOfAQueuedTaskStoresNothing(t *testing.T) {
	up := newSimUpstream(t, time.Hour, time.Hour, true) // queued throughout
	h, w, store := newCreatedWatcher(t, up)
	key, _ := callbacks.ParseSecret(callbacks.NewSecret())
	h.Callbacks = &callbacks.Outbox{Store: h.Store, Key: key, Client: callbacks.NewClient(true), Logger: zap.NewNop()}
	ctx := context.Background()
	ids := createTasks(t, h, 3)
	withCallback := strings.Replace(createBody, `"model"`, `"callback_url":"https://hooks.example.com/x","model"`, 1)
	r := serve(h, http.MethodPost, createPath, withCallback)
	called, _ := decode(t, r)["id"].(string)
	if r.Code != http.StatusOK || called == "" {
		t.Fatalf("create with a callback: %d %s", r.Code, r.Body)
	}
	for poll := range 2 {
		before := up.lists.Load()
		w.poll(ctx, append(slices.Clone(ids), called))
		if up.lists.Load() != before+1 {
			t.Fatalf("poll %d made %d list calls, want 1", poll, up.lists.Load()-before)
		}
		for _, id := range ids {
			rec, err := h.Store.Task(ctx, id)
			if err != nil || rec.Version != 1 || rec.Status != StatusQueued || len(rec.Result) != 0 {
				t.Fatalf("poll %d: record %+v, %v; want the created record (version 1, no answer)", poll, rec, err)
			}
		}
		rec, err := h.Store.Task(ctx, called)
		if err != nil || rec.Version != 2 || rec.Notified != StatusQueued || len(rec.Result) == 0 {
			t.Fatalf("poll %d: task with a callback %+v, %v; want its answer stored once, the queued callback sent", poll, rec, err)
		}
	}
	if n := store.read.Load(); n != 0 {
		t.Fatalf("the polls read %d records from the store, want 0", n)
	}
	list := decode(t, serve(h, http.MethodGet, createPath+"?page_size=10", ""))
	items, _ := list["items"].([]any)
	if len(items) != 4 {
		t.Fatalf("list: %v", list)
	}
	for _, it := range items {
		if m, _ := it.(map[string]any); m["status"] != StatusQueued || m["error"] != nil {
			t.Fatalf("list item %v; want queued, no error", it)
		}
	}
	get := serve(h, http.MethodGet, createPath+"/"+ids[0], "")
	if m := decode(t, get); get.Code != http.StatusOK || m["status"] != StatusQueued || m["id"] != ids[0] {
		t.Fatalf("client read: %d %s", get.Code, get.Body)
	}
	if rec, err := h.Store.Task(ctx, ids[0]); err != nil || rec.Version != 2 || len(rec.Result) == 0 || rec.RefreshedAt == 0 {
		t.Fatalf("after a client's read: %+v, %v; want the upstream's answer stored", rec, err)
	}
}
