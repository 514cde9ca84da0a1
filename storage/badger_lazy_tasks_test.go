package storage

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// openLazyTestBadger opens a store on a fixed date whose lazy commits are never synced by their
// timer during the test, so that every sync counted is one a caller waited for.
func openLazyTestBadger(t *testing.T) (context.Context, time.Time, *Badger) {
	t.Helper()
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	b, err := OpenBadger(t.TempDir(), BadgerOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	b.lazy.delay = time.Hour
	return context.Background(), now, b
}

// UpdateTasksFromLazily writes a batch whose changes may all be lost without waiting for a disk
// sync, and a batch with any other change with one, in one write; both are stored by
// compare-and-set, and a change whose record changed meanwhile is still made (durably).
func TestBadgerUpdateTasksFromLazilyWaitsOnlyForDurableChanges(t *testing.T) {
	ctx, now, b := openLazyTestBadger(t)
	var curs []Task
	for _, id := range []string{"task-a", "task-b", "task-c"} {
		task, err := b.CreateTask(ctx, Task{ID: id, Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		curs = append(curs, task)
	}
	change := func(_ int, t *Task) error { t.Status = "running"; return nil }
	for _, tc := range []struct {
		name    string
		mayLose func(i int) bool
		syncs   uint64
	}{
		{"every change lazy", func(int) bool { return true }, 0},
		{"one change durable: the whole batch", func(i int) bool { return i != 1 }, 1},
		{"no change lazy", nil, 1},
	} {
		before := b.sync.syncs()
		stored, errs := UpdateTasksFromLazily(ctx, b, curs, change, tc.mayLose)
		if got := b.sync.syncs() - before; got != tc.syncs {
			t.Errorf("%s: %d disk syncs; want %d", tc.name, got, tc.syncs)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: task %d: %v", tc.name, i, err)
			}
			read, err := b.Task(ctx, curs[i].ID)
			if err != nil || read.Version != curs[i].Version+1 || read.Status != "running" || stored[i].Version != read.Version {
				t.Fatalf("%s: task %d stored %+v, read %+v, %v", tc.name, i, stored[i], read, err)
			}
		}
		curs = stored
	}
	// A stale record in a lazy batch: its compare fails, and the change is made again from a
	// fresh read, durably.
	stale := curs[0]
	if _, err := b.ReplaceTask(ctx, curs[0]); err != nil {
		t.Fatal(err)
	}
	before := b.sync.syncs()
	stored, errs := UpdateTasksFromLazily(ctx, b, []Task{stale}, change, func(int) bool { return true })
	if errs[0] != nil || stored[0].Version != stale.Version+2 {
		t.Fatalf("the stale task: %+v, %v", stored[0], errs[0])
	}
	if got := b.sync.syncs() - before; got != 1 {
		t.Errorf("the stale task's change made %d disk syncs; want 1 (its retry)", got)
	}
}

// A lazy write of a record big enough for Badger's value log waits for a sync of the value log
// after all: the syncs that follow a lazy commit (and every durable one's) sync the value log
// only when a commit they cover tells them it wrote there.
func TestBadgerLazyTaskWriteOfABigValueSyncsTheValueLog(t *testing.T) {
	ctx, now, b := openLazyTestBadger(t)
	var valueLogSyncs atomic.Int32
	dbSync := b.logs.dbSync
	b.logs.dbSync = func() error { valueLogSyncs.Add(1); return dbSync() }
	task, err := b.CreateTask(ctx, Task{ID: "task-big", Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	big, err := json.Marshal(map[string]string{"note": strings.Repeat("x", valueThreshold)})
	if err != nil {
		t.Fatal(err)
	}
	before, syncsBefore := valueLogSyncs.Load(), b.sync.syncs()
	stored, errs := UpdateTasksFromLazily(ctx, b, []Task{task}, func(_ int, t *Task) error { t.Result = big; return nil }, func(int) bool { return true })
	if errs[0] != nil || stored[0].Version != 2 {
		t.Fatalf("stored %+v, %v", stored[0], errs[0])
	}
	if got := b.sync.syncs() - syncsBefore; got != 1 {
		t.Errorf("%d disk syncs; want 1", got)
	}
	if got := valueLogSyncs.Load() - before; got != 1 {
		t.Errorf("%d syncs of the value log; want 1", got)
	}
}
