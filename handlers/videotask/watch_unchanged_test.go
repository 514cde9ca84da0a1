package videotask

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
)

// The watcher writes a record only when the upstream's answer changes it, whichever way it read
// the task: alone (a batch of one task), or one by one because the batch's list call failed.
// The first read stores the answer (one write); the later reads of the same answer write
// nothing. (TestWatcherDoesNotRewriteUnchangedTasks read its five tasks this way only when a
// poll happened to take one of them alone, about once in 30 runs under -race.)
func TestWatcherDoesNotRewriteTasksReadAlone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tasks      int
		listAnswer int64 // 0: the list works
	}{
		{"a batch of one task", 1, 0},
		{"a batch whose list call fails", 3, http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newListUpstream(t)
			up.listAnswer.Store(tc.listAnswer)
			h := newHandler(t, up.URL, nil)
			h.Client.Timeout = 10 * time.Second
			ids := createTasks(t, h, tc.tasks)
			before := versions(t, h, ids)
			runWatcher(t, &Watcher{Tasks: h, Interval: 100 * time.Millisecond, RatePerSecond: 100, Concurrency: 2})
			// Each task read alone at least three times.
			waitCount(t, &up.singles, int64(3*tc.tasks), "single reads")
			requireWrittenOnce(t, h, before)
		})
	}
}

// versions are the record versions of the tasks ids.
func versions(t *testing.T, h *Handler, ids []string) map[string]int64 {
	t.Helper()
	v := make(map[string]int64, len(ids))
	for _, id := range ids {
		task, err := h.Store.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		v[id] = task.Version
	}
	return v
}

// requireWrittenOnce fails for each task whose record was written more than once since it had
// the version in before: the first read stores the upstream's answer, later reads of the same
// answer store nothing.
func requireWrittenOnce(t *testing.T, h *Handler, before map[string]int64) {
	t.Helper()
	for id, version := range versions(t, h, slices.Collect(maps.Keys(before))) {
		if version > before[id]+1 {
			t.Errorf("task %s went from version %d to %d though its answer never changed", id, before[id], version)
		}
	}
}

// An adaptor's task (read one by one, through its adaptor) is written by the watcher only when
// its provider's state changes the answer: the first read stores RUNNING, later reads of the
// same state store nothing, and read no record either. (Before, each watcher read of an
// adaptor's task read and wrote its record.)
func TestWatcherDoesNotRewriteUnchangedAdaptedTasks(t *testing.T) {
	d := &dashUpstream{status: "RUNNING"}
	h := newDashHandler(t, d)
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	h.Now = clock.Now
	store := &readCountingStore{Store: h.Store}
	h.Store = store
	w := &Watcher{Tasks: h, Interval: time.Hour}
	w.init()
	w.ownTickAndScan(context.Background())
	h.Watcher = w
	r := serve(h, http.MethodPost, createPath, `{"model":"wan","content":[{"type":"text","text":"hi"}]}`)
	id, _ := decode(t, r)["id"].(string)
	if r.Code != http.StatusOK || id == "" {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	for poll := 1; poll <= 4; poll++ {
		// Each poll starts from the record the watcher saw last: the create's, then its own.
		if calls, read := pollAfter(t, w, clock, store, []string{id}); calls != 1 || read != 0 {
			t.Fatalf("poll %d made %d upstream calls and read %d records, want 1 and 0", poll, calls, read)
		}
		rec, err := h.Store.Task(context.Background(), id)
		if err != nil || rec.Status != StatusRunning || rec.Version != 2 {
			t.Fatalf("after poll %d: %+v, %v; want running at version 2 (created, then the first read's change)", poll, rec, err)
		}
	}
	// A change of state is stored.
	d.set("FAILED")
	pollAfter(t, w, clock, store, []string{id})
	if rec, err := h.Store.Task(context.Background(), id); err != nil || rec.Status != StatusFailed || !rec.Finished || rec.Version != 3 {
		t.Fatalf("after the failure: %+v, %v; want failed and finished at version 3", rec, err)
	}
}
