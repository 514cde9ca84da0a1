package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// testTaskIDReused: an upstream may hand a task id out again after the first task under it was
// deleted. The second task starts at Version 1 too, so a change made from the first task's
// record (another account's, or created at another time) must conflict, alone and in a batch,
// instead of replacing the second task's record; a record that leaves account and creation time
// unset still takes the stored ones.
func testTaskIDReused(t *testing.T, s storage.Store) {
	ctx := context.Background()
	first := mustCreate(t, s, newTask("cgt-reused", "alice", 100))
	if err := s.DeleteTask(ctx, first.ID, first.Version); err != nil {
		t.Fatal(err)
	}
	second := mustCreate(t, s, newTask("cgt-reused", "bob", 200))
	stale := first
	stale.Status = "running"
	if _, err := s.ReplaceTask(ctx, stale); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a change from the deleted task's record: %v, want ErrConflict", err)
	}
	sameAccount := second
	sameAccount.CreatedAt = 150
	if _, errs := s.ReplaceTasks(ctx, []storage.Task{sameAccount}); !errors.Is(errs[0], storage.ErrConflict) {
		t.Fatalf("a batched change from a record of another creation time: %v, want ErrConflict", errs[0])
	}
	if got, err := s.Task(ctx, "cgt-reused"); err != nil || got.Account != "bob" || got.KeyID != "key_bob" || got.Status != "queued" || got.Version != second.Version {
		t.Fatalf("the second task's record became %+v, %v", got, err)
	}
	bare := storage.Task{ID: "cgt-reused", Status: "running", Version: second.Version}
	stored, err := s.ReplaceTask(ctx, bare)
	if err != nil || stored.Account != "bob" || stored.CreatedAt != 200 {
		t.Fatalf("a record without account and creation time: %+v, %v", stored, err)
	}
}
