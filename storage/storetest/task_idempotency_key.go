package storetest

import (
	"context"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// testTaskKeepsIdempotencyKey: the Idempotency-Key of the create that made a record
// (Task.IdempotencyKey, by which pass-through tells a provider's replay of a retried create from
// a reused id) is kept by CreateTask, by the compare-and-set that marks the record finished and
// by a batch's, and read back by Task and by a search of the account's records; a record
// without one (as those written before it was kept) reads without one, and a create of the
// same id with another key stores nothing.
func testTaskKeepsIdempotencyKey(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const key = "mg-5f0c6b1e9a4d2c7b8e3f1a0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b"
	task := newTask("idk-1", "alice", 100)
	task.IdempotencyKey, task.Active, task.Status = key, true, "active"
	created := mustCreate(t, s, task)
	plain := mustCreate(t, s, newTask("idk-2", "alice", 101))
	again := task
	again.IdempotencyKey = "mg-another"
	if _, err := s.CreateTask(ctx, again); err == nil {
		t.Fatal("a second create of idk-1 was stored")
	}
	next := created
	next.Finished, next.Status = true, "failed"
	if _, err := s.ReplaceTask(ctx, next); err != nil {
		t.Fatalf("ReplaceTask: %v", err)
	}
	got, err := s.Task(ctx, task.ID)
	if err != nil || got.IdempotencyKey != key || !got.Finished {
		t.Fatalf("Task = key %q, finished %v, %v; want the create's key, finished", got.IdempotencyKey, got.Finished, err)
	}
	later := got
	later.Notified = "failed"
	if _, errs := s.ReplaceTasks(ctx, []storage.Task{later}); errs[0] != nil {
		t.Fatalf("ReplaceTasks: %v", errs[0])
	}
	if got, err := s.Task(ctx, task.ID); err != nil || got.IdempotencyKey != key {
		t.Fatalf("after a batch's replace, key %q, %v", got.IdempotencyKey, err)
	}
	if got, err := s.Task(ctx, plain.ID); err != nil || got.IdempotencyKey != "" {
		t.Fatalf("a record without a key reads %q, %v", got.IdempotencyKey, err)
	}
	page, err := s.ListTasks(ctx, "alice", storage.TaskQuery{PageSize: 10, NoTotal: true})
	if err != nil || len(page.Tasks) != 2 {
		t.Fatalf("ListTasks = %+v, %v", page, err)
	}
	for _, listed := range page.Tasks {
		if want := map[string]string{"idk-1": key, "idk-2": ""}[listed.ID]; listed.IdempotencyKey != want {
			t.Fatalf("listed %s with key %q, want %q", listed.ID, listed.IdempotencyKey, want)
		}
	}
}
