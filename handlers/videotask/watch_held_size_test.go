package videotask

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// A record past maxHeldRecordBytes (an adaptor task's canonical request with inline media can
// reach the create's 1 MiB) is not held, whether the create made it or a poll: the watcher's
// memory is bounded in bytes as well as in records, and such a task's polls read the store.
func TestLargeRecordsAreNotHeld(t *testing.T) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	up := newSimUpstream(t, 100*time.Hour, time.Hour, true)
	_, w, _ := newClockedWatcher(t, up, clock)
	large := json.RawMessage(`"` + strings.Repeat("a", maxHeldRecordBytes) + `"`)
	small := storage.Task{ID: "cgt-small", Status: StatusQueued, Version: 1, Request: json.RawMessage(`{"prompt":"a lighthouse"}`)}
	big := storage.Task{ID: "cgt-big", Status: StatusQueued, Version: 1, Request: large}
	w.Watch(small)
	w.Watch(big)
	held := func(id string) bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, ok := w.records[id]
		return ok
	}
	if !held(small.ID) || held(big.ID) {
		t.Fatalf("after the creates: small held %v, large held %v; want true and false", held(small.ID), held(big.ID))
	}
	// A poll that leaves the small task's record grown past the bound lets the held copy go.
	grown := small
	grown.Version, grown.Result = 2, large
	w.hold([]seenRecord{{t: grown, fresh: true}}, nil)
	if held(small.ID) {
		t.Fatal("a record grown past maxHeldRecordBytes is still held")
	}
	// One back under the bound is held again.
	w.hold([]seenRecord{{t: small, fresh: true}}, nil)
	if !held(small.ID) {
		t.Fatal("a small record is not held after a poll")
	}
}

// A poll takes the records it starts from (takeHeld) and holds the records it leaves in them
// (heldOf): a task held again at its poll costs no new record; a record taken keeps nothing of
// its task alive; the held records a poll leaves are its own, not the ones it took.
func TestHeldRecordsReused(t *testing.T) {
	w := &Watcher{Tasks: &Handler{}}
	w.init()
	w.mu.Lock()
	w.tracked["cgt-1"] = true
	w.records["cgt-1"] = w.heldOf(storage.Task{ID: "cgt-1", Version: 1, Result: json.RawMessage(`{"id":"cgt-1"}`)}, 0)
	taken := w.records["cgt-1"]
	w.mu.Unlock()

	known, polls, unknown := w.takeHeld([]string{"cgt-1", "cgt-2"})
	if len(known) != 1 || known[0].Version != 1 || string(known[0].Result) != `{"id":"cgt-1"}` || polls["cgt-1"] != 0 || len(unknown) != 1 || unknown[0] != "cgt-2" {
		t.Fatalf("takeHeld = %+v, %v, %v", known, polls, unknown)
	}
	if taken.t.ID != "" || taken.t.Result != nil {
		t.Errorf("a record taken still holds its task: %+v", taken.t)
	}
	stored := known[0]
	stored.Version = 2
	w.hold([]seenRecord{{t: stored, fresh: true}}, polls)
	w.mu.Lock()
	held := w.records["cgt-1"]
	w.mu.Unlock()
	if held != taken {
		t.Error("the record held after the poll is a new one, not the one the poll took")
	}
	if held.t.Version != 2 || held.polls != 0 || string(held.t.Result) != `{"id":"cgt-1"}` {
		t.Errorf("held %+v after the poll, want version 2, polls 0", held)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		known, polls, _ := w.takeHeld([]string{"cgt-1"})
		w.mu.Lock()
		w.records["cgt-1"] = w.heldOf(known[0], polls["cgt-1"])
		w.mu.Unlock()
	}); allocs > 3 { // takeHeld's known slice and polls map (its header and its group)
		t.Errorf("a record taken and held again: %.0f allocations, want 3 (a new record makes 4)", allocs)
	}
}
