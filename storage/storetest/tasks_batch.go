package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// testTaskBatchCompareAndSet: ReplaceTasks compares each record on its own: a stale or missing
// record, or one naming another owner, fails alone, the others are stored, and the owner never
// changes.
func testTaskBatchCompareAndSet(t *testing.T, s storage.Store) {
	ctx := context.Background()
	a := mustCreate(t, s, newTask("cgt-ba", "alice", 100))
	b := mustCreate(t, s, newTask("cgt-bb", "alice", 101))
	c := mustCreate(t, s, newTask("cgt-bc", "bob", 102))
	if _, err := s.ReplaceTask(ctx, b); err != nil { // b is now at version 2: the batch's b is stale
		t.Fatal(err)
	}
	a.Status, b.Status, c.Status = "succeeded", "running", "succeeded"
	c.Account = "mallory"
	missing := newTask("cgt-missing", "alice", 1)
	got, errs := s.ReplaceTasks(ctx, []storage.Task{a, b, missing, c})
	if len(got) != 4 || len(errs) != 4 {
		t.Fatalf("ReplaceTasks answered %d records and %d errors for 4 tasks", len(got), len(errs))
	}
	if errs[0] != nil || got[0].Version != 2 || got[0].Status != "succeeded" || got[0].FinishedAt == 0 {
		t.Fatalf("first = %+v, %v", got[0], errs[0])
	}
	if !errors.Is(errs[1], storage.ErrConflict) {
		t.Fatalf("stale = %v, want ErrConflict", errs[1])
	}
	if !errors.Is(errs[2], storage.ErrNotFound) {
		t.Fatalf("missing = %v, want ErrNotFound", errs[2])
	}
	if !errors.Is(errs[3], storage.ErrConflict) {
		t.Fatalf("another owner = %v, want ErrConflict", errs[3])
	}
	for id, want := range map[string]struct {
		version int64
		status  string
	}{"cgt-ba": {2, "succeeded"}, "cgt-bb": {2, "queued"}, "cgt-bc": {1, "queued"}} {
		rec, err := s.Task(ctx, id)
		if err != nil || rec.Version != want.version || rec.Status != want.status || rec.Account == "mallory" {
			t.Fatalf("%s after the batch = %+v, %v; want version %d, %s", id, rec, err, want.version, want.status)
		}
	}
	// The unfinished index follows the batch: the finished task left it.
	open := map[string]bool{}
	if err := s.UnfinishedTasks(ctx, func(id string) bool { open[id] = true; return true }); err != nil {
		t.Fatal(err)
	}
	if open["cgt-ba"] || !open["cgt-bb"] || !open["cgt-bc"] {
		t.Fatalf("unfinished after the batch = %v", open)
	}
	if got, errs := s.ReplaceTasks(ctx, nil); len(got) != 0 || len(errs) != 0 {
		t.Fatalf("ReplaceTasks(nil) = %v, %v", got, errs)
	}
}

// testTaskBatchFinishedOnce: of two updaters of one task inside one batch and single updaters
// running at the same time, each trying to finish it, exactly one wins; a task of the batch that
// nobody else touches is stored at once whatever the others do; and increments made by
// concurrent UpdateTask calls and batches (UpdateTasksFrom) are never lost.
func testTaskBatchFinishedOnce(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const rounds = 20
	var wins, lost atomic.Int32
	finish := func(won *bool) func(t *storage.Task) error {
		return func(t *storage.Task) error {
			*won = false
			if t.Finished {
				return storage.ErrNoChange
			}
			t.Status, t.Finished, *won = "succeeded", true, true
			return nil
		}
	}
	for r := range rounds {
		race := mustCreate(t, s, newTask(fmt.Sprint("cgt-brace-", r), "alice", 0))
		calm := mustCreate(t, s, newTask(fmt.Sprint("cgt-bcalm-", r), "alice", 0))
		var wg sync.WaitGroup
		start := make(chan struct{})
		var batchWon [2]bool
		wg.Go(func() {
			<-start
			// Two updaters of one task in one batch, beside a task nobody else changes.
			stored, errs := storage.UpdateTasksFrom(ctx, s, []storage.Task{race, race, calm}, func(i int, t *storage.Task) error {
				if i == 2 {
					t.UpdatedAt++
					return nil
				}
				return finish(&batchWon[i])(t)
			})
			for i, err := range errs {
				if err != nil {
					t.Errorf("batch task %d: %v", i, err)
				}
			}
			if stored[2].UpdatedAt != 1 || stored[2].Version != 2 {
				t.Errorf("the calm task of the batch = %+v", stored[2])
			}
		})
		var singleWon [2]bool
		for i := range singleWon {
			wg.Go(func() {
				<-start
				if _, err := storage.UpdateTask(ctx, s, race.ID, finish(&singleWon[i])); err != nil {
					t.Errorf("single updater: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		n := 0
		for _, won := range append(batchWon[:], singleWon[:]...) {
			if won {
				n++
			}
		}
		wins.Add(int32(n))
		if n != 1 {
			lost.Add(1)
			t.Errorf("round %d: %d updaters won the finish, want exactly 1 (batch %v, single %v)", r, n, batchWon, singleWon)
		}
		rec, err := s.Task(ctx, race.ID)
		if err != nil || !rec.Finished || rec.Version != 2 {
			t.Fatalf("round %d: the raced task = %+v, %v; want finished once (version 2)", r, rec, err)
		}
	}
	if lost.Load() != 0 {
		t.Fatalf("%d of %d rounds did not have exactly one winner", lost.Load(), rounds)
	}

	// Increments: batches and single updates of the same records at once lose none.
	ids := []string{"cgt-binc-0", "cgt-binc-1", "cgt-binc-2"}
	for _, id := range ids {
		mustCreate(t, s, newTask(id, "alice", 0))
	}
	const batches, singles = 10, 10
	var wg sync.WaitGroup
	for range batches {
		wg.Go(func() {
			curs, err := s.ReadTasks(ctx, ids)
			if err != nil {
				t.Errorf("ReadTasks: %v", err)
				return
			}
			_, errs := storage.UpdateTasksFrom(ctx, s, curs, func(_ int, t *storage.Task) error { t.UpdatedAt++; return nil })
			for _, err := range errs {
				if err != nil {
					t.Errorf("batch increment: %v", err)
				}
			}
		})
	}
	for i := range singles {
		wg.Go(func() {
			if _, err := storage.UpdateTask(ctx, s, ids[i%len(ids)], func(t *storage.Task) error { t.UpdatedAt++; return nil }); err != nil {
				t.Errorf("single increment: %v", err)
			}
		})
	}
	wg.Wait()
	var total int64
	for _, id := range ids {
		rec, err := s.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Version != rec.UpdatedAt+1 {
			t.Errorf("%s: version %d after %d increments: a write was lost or doubled", id, rec.Version, rec.UpdatedAt)
		}
		total += rec.UpdatedAt
	}
	if want := int64(batches*len(ids) + singles); total != want {
		t.Fatalf("%d increments stored, want %d", total, want)
	}
}
