package videotask

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/testclock"
)

// The records a poll takes are reused for the records held after it (heldOf, release): across
// polls that hold, take, write and hold again the records of tasks of several accounts, every
// held record is its task's own (the id it is held under; the account, key and model of the
// task's stored record), no record is held twice or both held and spare, and the stored records
// keep their owners and their own answers.
func TestHeldRecordsReusedStayTheirTasks(t *testing.T) {
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	up := newSimUpstream(t, 150*time.Minute, 100*time.Hour, true) // queued, then running
	h, w, store := newClockedWatcher(t, up, clock)
	const n = 12
	var ids []string
	for i := range n {
		r := httptest.NewRequest(http.MethodPost, createPath, strings.NewReader(createBody))
		r.Header.Set("Content-Type", "application/json")
		who := auth.Identity{KeyID: "key-" + strconv.Itoa(i), Account: "account-" + strconv.Itoa(i%3)}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r.WithContext(auth.WithIdentity(r.Context(), who)))
		id, _ := decode(t, rec)["id"].(string)
		if rec.Code != http.StatusOK || id == "" {
			t.Fatalf("create = %d %s", rec.Code, rec.Body)
		}
		ids = append(ids, id)
	}
	heldFor := map[*heldRecord]string{} // the task each record was last seen held for
	reused := 0                         // records seen held for another task than before
	check := func(poll int) {
		t.Helper()
		w.mu.Lock()
		defer w.mu.Unlock()
		seen := map[*heldRecord]string{}
		for id, r := range w.records {
			if other, twice := seen[r]; twice {
				t.Fatalf("poll %d: one record held for %s and %s", poll, other, id)
			}
			seen[r] = id
			if before, ok := heldFor[r]; ok && before != id {
				reused++
			}
			heldFor[r] = id
			stored, err := h.Store.Task(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.t.ID != id || r.t.Account != stored.Account || r.t.KeyID != stored.KeyID || r.t.Model != stored.Model ||
				r.t.Version > stored.Version {
				t.Fatalf("poll %d: held for %s: task %s of %s/%s at version %d; stored of %s/%s at version %d",
					poll, id, r.t.ID, r.t.Account, r.t.KeyID, r.t.Version, stored.Account, stored.KeyID, stored.Version)
			}
		}
		for _, r := range w.spare {
			if id, held := seen[r]; held {
				t.Fatalf("poll %d: the record held for %s is also spare", poll, id)
			}
			if r.t.ID != "" {
				t.Fatalf("poll %d: a spare record keeps task %s", poll, r.t.ID)
			}
		}
	}
	check(0)
	for poll := 1; poll <= maxHeldPolls+4; poll++ {
		// Half the tasks at a time, so that one poll's spare records hold the other half's.
		half := ids[poll%2*n/2 : poll%2*n/2+n/2]
		pollAfter(t, w, clock, store, half)
		check(poll)
	}
	for i, id := range ids {
		stored, err := h.Store.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct{ ID, Status string }
		if err := json.Unmarshal(stored.Result, &answer); err != nil || answer.ID != id {
			t.Errorf("task %s's stored answer %s (%v)", id, stored.Result, err)
		}
		if stored.KeyID != "key-"+strconv.Itoa(i) || stored.Account != "account-"+strconv.Itoa(i%3) {
			t.Errorf("task %s stored as %s of %s", id, stored.KeyID, stored.Account)
		}
	}
	if reused == 0 {
		t.Error("no record was held for another task: the test did not reach heldOf's reuse")
	}
}
