package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testTaskFoundByIdempotencyKey: a video task's create that carries the key of its
// Idempotency-Key (Task.IdempotencyKey) is found by it (TaskOfIdempotencyKey), also through a
// slot claim's create where the backend has one; a failed second create of the same id, another
// kind's record, an unknown key and a deleted record are not found (ErrNotFound).
func testTaskFoundByIdempotencyKey(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const key = "alice/video-tasks/0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
	task := newTask("keyed-1", "alice", 100)
	task.IdempotencyKey = key
	mustCreate(t, s, task)
	again := task
	again.IdempotencyKey = key + "-2"
	if _, err := s.CreateTask(ctx, again); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second create of keyed-1 = %v, want ErrExists", err)
	}
	found, err := s.TaskOfIdempotencyKey(ctx, key)
	if err != nil || found.ID != task.ID || found.IdempotencyKey != key || found.Version != 1 {
		t.Fatalf("TaskOfIdempotencyKey = %+v, %v; want keyed-1", found, err)
	}
	image := newTask("keyed-image", "alice", 101)
	image.Kind, image.IdempotencyKey = storage.KindImage, "mg-image-key"
	mustCreate(t, s, image)
	for _, k := range []string{key + "-2", "mg-image-key", "alice/video-tasks/unknown"} {
		if _, err := s.TaskOfIdempotencyKey(ctx, k); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("TaskOfIdempotencyKey(%q) = %v, want ErrNotFound", k, err)
		}
	}
	if claims, ok := s.(storage.SlotClaims); ok {
		c := storage.SlotClaim{ID: "claim-keyed", Counter: "active/keyed", Deadline: time.Now().Add(time.Minute)}
		if ok, err := claims.ClaimSlot(ctx, c, 5); err != nil || !ok {
			t.Fatalf("ClaimSlot = %v, %v", ok, err)
		}
		claimed := newTask("keyed-2", "alice", 102)
		claimed.IdempotencyKey, claimed.Active = key+"-claimed", true
		if _, err := claims.CreateClaimedTask(ctx, claimed, c); err != nil {
			t.Fatalf("CreateClaimedTask: %v", err)
		}
		if found, err := s.TaskOfIdempotencyKey(ctx, key+"-claimed"); err != nil || found.ID != "keyed-2" {
			t.Fatalf("TaskOfIdempotencyKey of a claimed create = %+v, %v", found, err)
		}
	}
	if err := s.DeleteTask(ctx, task.ID, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TaskOfIdempotencyKey(ctx, key); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("TaskOfIdempotencyKey of a deleted record = %v, want ErrNotFound", err)
	}
}
