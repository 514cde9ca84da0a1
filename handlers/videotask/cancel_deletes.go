package videotask

import (
	"fmt"
	"sync"
)

// A cancel's DELETE of a task that the gateway read as running may meet the task's end: the
// provider (Ark) cannot cancel a running task, so when it accepts the DELETE the task had just
// finished, and it deleted it. (A task read queued is cancelled by the DELETE; a 404 after that
// is a cancelled task that a concurrent DELETE deleted, released as before.) A read of the task after that answers 404, which alone says nothing of how the task
// ended: it may have succeeded, and the provider bills it. So while a DELETE of this process is
// underway, and once the provider accepted it, a 404 that finishes the task (finishUnreachable,
// whether the cancel's own confirming read, the watcher's or a client's poll met it) charges its
// estimate (accounting.StatusDeleted) instead of releasing it. A 404 met by another instance
// meanwhile is not known here: it releases the hold, as any task gone upstream does.

// deletesUnderway counts, per store and task id, the DELETEs of this process underway.
var deletesUnderway = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// deleteKey names a task of h's store, as refreshes does.
func (h *Handler) deleteKey(taskID string) string { return fmt.Sprintf("%p/%s", h.Store, taskID) }

// deleting notes a DELETE of taskID underway until the returned func is called.
func (h *Handler) deleting(taskID string) (done func()) {
	k := h.deleteKey(taskID)
	deletesUnderway.Lock()
	deletesUnderway.n[k]++
	deletesUnderway.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			deletesUnderway.Lock()
			defer deletesUnderway.Unlock()
			if deletesUnderway.n[k]--; deletesUnderway.n[k] <= 0 {
				delete(deletesUnderway.n, k)
			}
		})
	}
}

// deleteUnderway reports whether a DELETE of taskID by this process is underway.
func (h *Handler) deleteUnderway(taskID string) bool {
	deletesUnderway.Lock()
	defer deletesUnderway.Unlock()
	return deletesUnderway.n[h.deleteKey(taskID)] > 0
}
