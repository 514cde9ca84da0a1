package storage

import (
	"context"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestBadgerTakesBackTaskWritesWhoseSyncFailed: a task create, change or batch change whose
// disk sync fails is reported as failed and taken back, so that the record stands as the
// caller, told of the failure, believes: no record after a failed create (the handler has
// released and refunded), the previous record (as a new version) after a failed change (the
// side effects of the change are still to do, by whoever retries it).
func TestBadgerTakesBackTaskWritesWhoseSyncFailed(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	b, err := OpenBadger(t.TempDir(), BadgerOptions{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	synced := b.sync.sync
	diskFailed := errors.New("disk failed")
	failSyncs := func(fail bool) {
		if fail {
			b.sync.sync = func(bool) error { return diskFailed }
		} else {
			b.sync.sync = synced
		}
	}
	unfinished := func() []string {
		var ids []string
		if err := b.UnfinishedTasks(ctx, func(id string) bool { ids = append(ids, id); return true }); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	newTask := func(id string) Task {
		return Task{ID: id, Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: time.Now().Unix()}
	}

	// A create.
	failSyncs(true)
	if _, err := b.CreateTask(ctx, newTask("cgt-a")); !errors.Is(err, diskFailed) {
		t.Fatalf("a create whose sync failed = %v, want the sync's error", err)
	}
	failSyncs(false)
	if _, err := b.Task(ctx, "cgt-a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the record of a create whose sync failed: %v, want ErrNotFound", err)
	}
	if ids := unfinished(); slices.Contains(ids, "cgt-a") {
		t.Fatalf("a create whose sync failed is still in the unfinished index: %v", ids)
	}

	// A change.
	task, err := b.CreateTask(ctx, newTask("cgt-b"))
	if err != nil {
		t.Fatal(err)
	}
	done := task
	done.Status, done.Finished = "succeeded", true
	failSyncs(true)
	if _, err := b.ReplaceTask(ctx, done); !errors.Is(err, diskFailed) {
		t.Fatalf("a change whose sync failed = %v, want the sync's error", err)
	}
	failSyncs(false)
	got, err := b.Task(ctx, "cgt-b")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "queued" || got.Finished || got.Version != task.Version+2 {
		t.Fatalf("after a change whose sync failed the record is %+v; want the previous one (queued) as version %d", got, task.Version+2)
	}
	if ids := unfinished(); !slices.Contains(ids, "cgt-b") {
		t.Fatalf("a task whose finishing change was taken back is not in the unfinished index: %v", ids)
	}
	// The change is made again by whoever retries it, from the record as it stands.
	done.Version = got.Version
	if _, err := b.ReplaceTask(ctx, done); err != nil {
		t.Fatal(err)
	}

	// A batch change.
	c, err := b.CreateTask(ctx, newTask("cgt-c"))
	if err != nil {
		t.Fatal(err)
	}
	doneC := c
	doneC.Status, doneC.Finished = "failed", true
	failSyncs(true)
	_, errs := b.ReplaceTasks(ctx, []Task{doneC})
	failSyncs(false)
	if !errors.Is(errs[0], diskFailed) {
		t.Fatalf("a batch change whose sync failed = %v, want the sync's error", errs[0])
	}
	if got, err := b.Task(ctx, "cgt-c"); err != nil || got.Status != "queued" || got.Version != c.Version+2 {
		t.Fatalf("after a batch change whose sync failed the record is %+v, %v; want the previous one as version %d", got, err, c.Version+2)
	}
	// The take-backs themselves were made while the syncs still failed: made is not failed.
	for _, e := range logs.All() {
		t.Errorf("logged an error: %s %v", e.Message, e.ContextMap())
	}
}

// TestLogSyncFallsBackWhenALogCannotBeOpened: a sync that cannot open a log or the directory
// (too many open files, say) falls back to DB.Sync and tries again, instead of failing commits
// whose writes are fine.
func TestLogSyncFallsBackWhenALogCannotBeOpened(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var failures, dbSyncs int
	open, dbSync := b.logs.openFile, b.logs.dbSync
	b.logs.openFile = func(name string) (*os.File, error) {
		if failures == 0 {
			failures++
			return nil, syscall.EMFILE
		}
		return open(name)
	}
	b.logs.dbSync = func() error { dbSyncs++; return dbSync() }
	if _, err := b.CreateTask(context.Background(), Task{ID: "cgt-1", Kind: KindVideo, Account: "acme", CreatedAt: time.Now().Unix()}); err != nil {
		t.Fatalf("a create whose sync could not open a file at first = %v, want success", err)
	}
	if ownLogSync && (failures != 1 || dbSyncs != 1) {
		t.Fatalf("%d failed opens and %d DB.Sync calls; want 1 and 1", failures, dbSyncs)
	}
}

// TestBadgerTakenBackCreateUnbindsItsHold: a create whose disk sync fails takes back the binding
// of its hold with its record, so that the hold is on the reconciler's list again: if the
// process dies before the caller releases it, the reconciler does; bound to a task that no
// longer exists, it would stay held for good.
func TestBadgerTakenBackCreateUnbindsItsHold(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	b, err := OpenBadger(t.TempDir(), BadgerOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	deadline := now.Add(time.Hour)
	if _, _, err := b.Hold(ctx, Hold{ID: "h1", Account: "acme", Amount: 5, Deadline: deadline}, now); err != nil {
		t.Fatal(err)
	}
	synced := b.sync.sync
	diskFailed := errors.New("disk failed")
	b.sync.sync = func(bool) error { return diskFailed }
	_, err = b.CreateTask(ctx, Task{ID: "cgt-h", Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: now.Unix(), HoldID: "h1"})
	b.sync.sync = synced
	if !errors.Is(err, diskFailed) {
		t.Fatalf("a create whose sync failed = %v, want the sync's error", err)
	}
	if h, err := b.HoldByID(ctx, "h1"); err != nil || h.Bound || h.State != HoldOpen {
		t.Fatalf("the hold of a create taken back = %+v, %v; want open and unbound", h, err)
	}
	overdue, err := b.OverdueHolds(ctx, deadline.Add(time.Second), 10)
	if err != nil || len(overdue) != 1 || overdue[0].ID != "h1" {
		t.Fatalf("overdue holds after the deadline = %+v, %v; want h1", overdue, err)
	}
}
