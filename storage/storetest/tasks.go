package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

func newTask(id, account string, created int64) storage.Task {
	return storage.Task{
		ID: id, Kind: storage.KindVideo, Account: account, KeyID: "key_" + account, Provider: "p",
		Model: "m", Status: "queued", CreatedAt: created, UpdatedAt: created,
		ExpiresAt: time.Now().Add(time.Hour).Unix(),
	}
}

func mustCreate(t *testing.T, s storage.Store, task storage.Task) storage.Task {
	t.Helper()
	got, err := s.CreateTask(context.Background(), task)
	if err != nil {
		t.Fatalf("CreateTask(%s): %v", task.ID, err)
	}
	return got
}

func testTaskCreateIfAbsent(t *testing.T, s storage.Store) {
	ctx := context.Background()
	first := mustCreate(t, s, newTask("cgt-1", "alice", 100))
	if first.Version != 1 {
		t.Fatalf("created version = %d, want 1", first.Version)
	}
	// Another account cannot take over an existing id.
	if _, err := s.CreateTask(ctx, newTask("cgt-1", "mallory", 101)); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second create = %v, want ErrExists", err)
	}
	got, err := s.Task(ctx, "cgt-1")
	if err != nil || got.Account != "alice" || got.Version != 1 {
		t.Fatalf("Task = %+v, %v", got, err)
	}
	if _, err := s.Task(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown task = %v, want ErrNotFound", err)
	}
	// Of many concurrent creates of one id, exactly one succeeds.
	wins := winners(t, 20, func(i int) (bool, error) {
		_, err := s.CreateTask(ctx, newTask("cgt-race", fmt.Sprint("acct", i), 100))
		if errors.Is(err, storage.ErrExists) {
			return false, nil
		}
		return err == nil, err
	})
	if wins != 1 {
		t.Fatalf("%d concurrent creates of one id succeeded, want 1", wins)
	}
}

func testTaskCompareAndSet(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v1 := mustCreate(t, s, newTask("cgt-cas", "alice", 100))
	v1.Status = "running"
	v2, err := s.ReplaceTask(ctx, v1)
	if err != nil || v2.Version != 2 {
		t.Fatalf("ReplaceTask = %+v, %v", v2, err)
	}
	stale := v1 // still version 1
	stale.CallbackURL = "https://stale.example/"
	if _, err := s.ReplaceTask(ctx, stale); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale replace = %v, want ErrConflict", err)
	}
	// The owner never changes: a replace that names another is a conflict (the record it was
	// made from is another task's), and one that names none keeps the stored owner.
	mallory := v2
	mallory.Account = "mallory"
	if _, err := s.ReplaceTask(ctx, mallory); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("replace naming another owner = %v, want ErrConflict", err)
	}
	v2.Account = ""
	v3, err := s.ReplaceTask(ctx, v2)
	if err != nil || v3.Account != "alice" || v3.Version != 3 {
		t.Fatalf("replace changed the owner: %+v, %v", v3, err)
	}
	if _, err := s.ReplaceTask(ctx, newTask("missing", "alice", 1)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("replace of a missing task = %v, want ErrNotFound", err)
	}
	if err := s.DeleteTask(ctx, "cgt-cas", 2); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale delete = %v, want ErrConflict", err)
	}
	if err := s.DeleteTask(ctx, "cgt-cas", 3); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s.Task(ctx, "cgt-cas"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted task = %v", err)
	}
	if err := s.DeleteTask(ctx, "cgt-cas", 3); err != nil {
		t.Fatalf("deleting a missing task = %v, want nil", err)
	}
	// UpdateTask: ErrNoChange writes nothing.
	mustCreate(t, s, newTask("cgt-nochange", "alice", 100))
	got, err := storage.UpdateTask(ctx, s, "cgt-nochange", func(*storage.Task) error { return storage.ErrNoChange })
	if err != nil || got.Version != 1 {
		t.Fatalf("UpdateTask(ErrNoChange) = %+v, %v", got, err)
	}
	if _, err := storage.UpdateTask(ctx, s, "missing", func(*storage.Task) error { return nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("UpdateTask(missing) = %v", err)
	}
}

// testTaskTwoUpdaters: concurrent updaters of one record never lose each other's change.
func testTaskTwoUpdaters(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCreate(t, s, newTask("cgt-upd", "alice", 0))
	const n = 40
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := storage.UpdateTask(ctx, s, "cgt-upd", func(t *storage.Task) error { t.UpdatedAt++; return nil }); err != nil {
				t.Errorf("UpdateTask: %v", err)
			}
		}()
	}
	// Meanwhile a second kind of updater clears the callback, as a 410 does.
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := storage.UpdateTask(ctx, s, "cgt-upd", func(t *storage.Task) error { t.CallbackURL, t.CallbackGone = "", true; return nil }); err != nil {
			t.Errorf("UpdateTask: %v", err)
		}
	}()
	wg.Wait()
	got, err := s.Task(ctx, "cgt-upd")
	if err != nil || got.UpdatedAt != n || !got.CallbackGone || got.Version != n+2 {
		t.Fatalf("after %d increments and one 410: %+v, %v", n, got, err)
	}
}

// testTaskFinishedOnce: of many refreshers that see a task finish, exactly one wins the change
// (and would release its slot and refund).
func testTaskFinishedOnce(t *testing.T, s storage.Store) {
	ctx := context.Background()
	mustCreate(t, s, newTask("cgt-fin", "alice", 0))
	won := winners(t, 30, func(int) (bool, error) {
		won := false
		_, err := storage.UpdateTask(ctx, s, "cgt-fin", func(t *storage.Task) error {
			won = false
			if t.Finished {
				return storage.ErrNoChange
			}
			t.Status, t.Finished, won = "succeeded", true, true
			return nil
		})
		return won, err
	})
	if won != 1 {
		t.Fatalf("%d updaters won the finish, want exactly 1", won)
	}
}

func testTaskListAndIndexes(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for i := range 5 {
		task := newTask(fmt.Sprintf("cgt-a%d", i), "alice", int64(100+i))
		if i == 1 {
			task.Status = "succeeded"
		}
		mustCreate(t, s, task)
	}
	mustCreate(t, s, newTask("cgt-b0", "bob", 500))
	img := newTask("img-0", "alice", 600)
	img.Kind = storage.KindImage
	mustCreate(t, s, img)

	page, err := s.ListTasks(ctx, "alice", storage.TaskQuery{Kind: storage.KindVideo, PageNum: 1, PageSize: 2})
	if err != nil || page.Total != 5 || len(page.Tasks) != 2 || page.Tasks[0].ID != "cgt-a4" || page.Tasks[1].ID != "cgt-a3" {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	page, err = s.ListTasks(ctx, "alice", storage.TaskQuery{Kind: storage.KindVideo, PageNum: 3, PageSize: 2})
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != "cgt-a0" {
		t.Fatalf("last page = %+v, %v", page, err)
	}
	page, err = s.ListTasks(ctx, "alice", storage.TaskQuery{Kind: storage.KindVideo, Status: "succeeded", PageNum: 1, PageSize: 10})
	if err != nil || page.Total != 1 || page.Tasks[0].ID != "cgt-a1" {
		t.Fatalf("status filter = %+v, %v", page, err)
	}
	page, err = s.ListTasks(ctx, "alice", storage.TaskQuery{IDs: []string{"cgt-b0", "cgt-a2"}, PageNum: 1, PageSize: 10})
	if err != nil || page.Total != 1 || page.Tasks[0].ID != "cgt-a2" {
		t.Fatalf("another account's id leaked into a list: %+v, %v", page, err)
	}
	// The unfinished index follows the status.
	open := map[string]bool{}
	collect := func() {
		clear(open)
		if err := s.UnfinishedTasks(ctx, func(id string) bool { open[id] = true; return true }); err != nil {
			t.Fatal(err)
		}
	}
	collect()
	if len(open) != 5 || open["cgt-a1"] || open["img-0"] {
		t.Fatalf("unfinished = %v, want the 5 queued video tasks", open)
	}
	if _, err := storage.UpdateTask(ctx, s, "cgt-a2", func(t *storage.Task) error { t.Status = "failed"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.UpdateTask(ctx, s, "cgt-a3", func(t *storage.Task) error { t.Finished = true; return nil }); err != nil {
		t.Fatal(err)
	}
	collect()
	if len(open) != 3 || open["cgt-a2"] || open["cgt-a3"] {
		t.Fatalf("unfinished after two finished = %v", open)
	}
}

func testRelayTokenExpires(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if err := s.SetRelayToken(ctx, "hash-long", "cgt-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRelayToken(ctx, "hash-short", "cgt-2", time.Second); err != nil {
		t.Fatal(err)
	}
	if id, err := s.RelayTask(ctx, "hash-long"); err != nil || id != "cgt-1" {
		t.Fatalf("RelayTask = %q, %v", id, err)
	}
	if _, err := s.RelayTask(ctx, "unknown"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown token = %v", err)
	}
	eventually(t, 10*time.Second, func() bool {
		_, err := s.RelayTask(ctx, "hash-short")
		return errors.Is(err, storage.ErrNotFound)
	}, "a relay token outlived its TTL")
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TaskExpiries is the part of a backend that the retention test reads: when a task record
// expires. Every backend implements it.
type TaskExpiries interface {
	TaskExpiresAt(ctx context.Context, id string) (time.Time, error)
}

// testTaskRetentionFromFinish checks that a task's retention counts from its finish: a task that
// runs past its retention keeps its record (and so its active slot and its refund) until it
// finishes, and is kept the retention after that.
func testTaskRetentionFromFinish(t *testing.T, s storage.Store) {
	ctx := context.Background()
	ex, ok := s.(TaskExpiries)
	if !ok {
		t.Fatalf("%T does not implement TaskExpiresAt", s)
	}
	const retention = time.Hour
	const slack = time.Minute
	expiry := func(id string) time.Time {
		t.Helper()
		at, err := ex.TaskExpiresAt(ctx, id)
		if err != nil {
			t.Fatalf("TaskExpiresAt(%s): %v", id, err)
		}
		return at
	}
	within := func(what string, got, want time.Time) {
		t.Helper()
		if d := got.Sub(want); d < -slack || d > slack {
			t.Fatalf("%s expires at %s, want about %s", what, got.UTC(), want.UTC())
		}
	}
	// Created two hours ago with a retention of one hour, still running.
	now := time.Now()
	created := now.Add(-2 * time.Hour).Unix()
	running := newTask("cgt-long", "alice", created)
	running.ExpiresAt = created + int64(retention/time.Second)
	running.Active = true
	mustCreate(t, s, running)
	within("an unfinished task", expiry("cgt-long"), time.Unix(created, 0).Add(storage.MaxTaskRun+retention))

	// A refresh that leaves it running changes nothing.
	if _, err := storage.UpdateTask(ctx, s, "cgt-long", func(t *storage.Task) error { t.Status = "running"; return nil }); err != nil {
		t.Fatal(err)
	}
	within("a running task", expiry("cgt-long"), time.Unix(created, 0).Add(storage.MaxTaskRun+retention))

	// It finishes now: kept for the retention from now.
	done, err := storage.UpdateTask(ctx, s, "cgt-long", func(t *storage.Task) error {
		t.Status, t.Finished, t.Active = "succeeded", true, false
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Unix(done.FinishedAt, 0).Sub(now); d < -slack || d > slack {
		t.Fatalf("FinishedAt = %d, want about now (%d)", done.FinishedAt, now.Unix())
	}
	within("a finished task", expiry("cgt-long"), now.Add(retention))
	// Later writes keep the first finish time.
	again, err := storage.UpdateTask(ctx, s, "cgt-long", func(t *storage.Task) error { t.Notified = "succeeded"; return nil })
	if err != nil || again.FinishedAt != done.FinishedAt {
		t.Fatalf("after another write FinishedAt = %d, want %d (%v)", again.FinishedAt, done.FinishedAt, err)
	}
	within("a finished task written again", expiry("cgt-long"), now.Add(retention))

	// A record that is finished when created (an object of another kind) expires a retention
	// after its creation, as before.
	obj := storage.Task{ID: "resp_1", Kind: "response", Account: "alice", Status: "created",
		CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(retention).Unix()}
	mustCreate(t, s, obj)
	within("an object record", expiry("resp_1"), now.Add(retention))
}
