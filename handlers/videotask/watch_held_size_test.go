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
