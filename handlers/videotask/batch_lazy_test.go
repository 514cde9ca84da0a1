package videotask

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// lazyRecordingStore records, for each ReplaceTasks call, whether it was asked to write lazily.
type lazyRecordingStore struct {
	storage.Store
	mu    sync.Mutex
	lazy  []bool
	tasks [][]storage.Task
}

func (s *lazyRecordingStore) ReplaceTasks(ctx context.Context, tasks []storage.Task) ([]storage.Task, []error) {
	s.mu.Lock()
	s.lazy = append(s.lazy, storage.IsLazySync(ctx))
	s.tasks = append(s.tasks, tasks)
	s.mu.Unlock()
	return s.Store.ReplaceTasks(ctx, tasks)
}

// A batch of answers that set nothing off (tasks now running, no callback) is written lazily; a
// batch in which a task fails (a final status: its slot, hold and callback follow) is written
// durably, before any side effect runs. A task whose answer did not change is not written at
// all, and neither is one still queued that no read has answered yet (stillUnread).
func TestBatchWritesLazilyOnlyWhatSetsNothingOff(t *testing.T) {
	var n atomic.Int64
	var mu sync.Mutex
	status := map[string]string{}
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			id := fmt.Sprintf("cgt-lazy-%d", n.Add(1))
			mu.Lock()
			status[id] = StatusQueued
			mu.Unlock()
			fmt.Fprintf(w, `{"id":%q}`, id)
			return
		}
		var items []string
		mu.Lock()
		for _, id := range r.URL.Query()["filter.task_ids"] {
			items = append(items, fmt.Sprintf(`{"id":%q,"model":"m","status":%q,"created_at":1,"updated_at":2}`, id, status[id]))
		}
		mu.Unlock()
		fmt.Fprintf(w, `{"items":[%s],"total":%d}`, strings.Join(items, ","), len(items))
	})
	h := newHandler(t, up.URL, nil)
	store := &lazyRecordingStore{Store: h.Store}
	h.Store = store
	p, tasks := batchOf(t, h, 2)
	steps := []struct {
		name     string
		statuses [2]string
		written  int // records written, in one store write when any
		lazy     bool
	}{
		{"first read, both queued", [2]string{StatusQueued, StatusQueued}, 0, false},
		{"one starts running", [2]string{StatusRunning, StatusQueued}, 1, true},
		{"one fails", [2]string{StatusFailed, StatusQueued}, 1, false},
	}
	for _, step := range steps {
		mu.Lock()
		for i, task := range tasks {
			status[task.ID] = step.statuses[i]
		}
		mu.Unlock()
		calls := len(store.lazy)
		h.refreshBatch(context.Background(), p, tasks, nil, nil)
		if step.written == 0 {
			if len(store.lazy) != calls {
				t.Fatalf("%s: %d store writes; want none", step.name, len(store.lazy)-calls)
			}
		} else {
			if len(store.lazy) != calls+1 {
				t.Fatalf("%s: %d store writes; want 1", step.name, len(store.lazy)-calls)
			}
			if store.lazy[calls] != step.lazy {
				t.Errorf("%s: written lazily %v; want %v", step.name, store.lazy[calls], step.lazy)
			}
			if got := len(store.tasks[calls]); got != step.written {
				t.Errorf("%s: %d records written; want %d", step.name, got, step.written)
			}
		}
		for i, task := range tasks {
			read, err := h.Store.Task(context.Background(), task.ID)
			if err != nil || read.Status != step.statuses[i] {
				t.Fatalf("%s: task %d is %+v, %v; want %s", step.name, i, read, err, step.statuses[i])
			}
			tasks[i] = read
		}
	}
}
