package storetest

import (
	"context"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// testTaskKeepsEndpoint: the endpoint of the create that made a record (Task.Endpoint, which the
// task_finished usage record of its end names) is kept by CreateTask and by the compare-and-set
// that marks the record finished, and read back by Task and by a search of the account's records;
// a record without one reads without one.
func testTaskKeepsEndpoint(t *testing.T, s storage.Store) {
	ctx := context.Background()
	task := newTask("ept-1", "alice", 100)
	task.Kind, task.Endpoint, task.Active, task.Status = storage.KindImage, "/v1/images/generations", true, "active"
	created := mustCreate(t, s, task)
	plain := mustCreate(t, s, newTask("ept-2", "alice", 101))
	next := created
	next.Finished, next.Status = true, "failed"
	if _, err := s.ReplaceTask(ctx, next); err != nil {
		t.Fatalf("ReplaceTask: %v", err)
	}
	got, err := s.Task(ctx, task.ID)
	if err != nil || got.Endpoint != "/v1/images/generations" || !got.Finished {
		t.Fatalf("Task = endpoint %q, finished %v, %v; want the create's endpoint, finished", got.Endpoint, got.Finished, err)
	}
	if got, err := s.Task(ctx, plain.ID); err != nil || got.Endpoint != "" {
		t.Fatalf("a record without an endpoint reads %q, %v", got.Endpoint, err)
	}
	page, err := s.ListTasks(ctx, "alice", storage.TaskQuery{PageSize: 10, NoTotal: true})
	if err != nil || len(page.Tasks) != 2 {
		t.Fatalf("ListTasks = %+v, %v", page, err)
	}
	for _, listed := range page.Tasks {
		if want := map[string]string{"ept-1": "/v1/images/generations", "ept-2": ""}[listed.ID]; listed.Endpoint != want {
			t.Fatalf("listed %s with endpoint %q, want %q", listed.ID, listed.Endpoint, want)
		}
	}
}
