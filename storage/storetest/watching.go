package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testWatching: the unfinished tasks are listed by shard, records are read in batches, and
// watchers see each other through heartbeats by the callers' clock.
func testWatching(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const shards = 4
	var open []string
	for i := range 40 {
		task := mustCreate(t, s, newTask(fmt.Sprintf("cgt-w%02d", i), "alice", int64(100+i)))
		if i%10 == 9 {
			task.Status = "succeeded"
			if _, err := s.ReplaceTask(ctx, task); err != nil {
				t.Fatal(err)
			}
			continue
		}
		open = append(open, task.ID)
	}

	// Every unfinished task is named once, under its own shard; finished ones are not.
	var seen []string
	for shard := range shards {
		err := s.UnfinishedTaskIDs(ctx, shards, func(sh int) bool { return sh == shard }, func(id string) bool {
			if got := storage.TaskShard(id, shards); got != shard {
				t.Errorf("task %s (shard %d) listed under shard %d", id, got, shard)
			}
			seen = append(seen, id)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, open) {
		t.Fatalf("unfinished by shard = %v, want %v", seen, open)
	}
	n := 0
	if err := s.UnfinishedTaskIDs(ctx, shards, func(int) bool { return true }, func(string) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Fatalf("stopping after 3: %d calls, %v", n, err)
	}

	// ReadTasks: the records that exist, in order, with their versions.
	ids := []string{"cgt-w05", "nope", "cgt-w09", "cgt-w01"}
	got, err := s.ReadTasks(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != "cgt-w05" || got[1].ID != "cgt-w09" || got[2].ID != "cgt-w01" {
		t.Fatalf("ReadTasks = %+v", got)
	}
	if got[1].Version != 2 || got[1].Status != "succeeded" || got[0].Version != 1 || got[0].Account != "alice" {
		t.Fatalf("ReadTasks records: %+v", got)
	}
	if got, err := s.ReadTasks(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("ReadTasks(nil) = %v, %v", got, err)
	}

	// Heartbeats: members alive at the caller's now, sorted; a zero ttl leaves the group.
	t0 := time.Now()
	beat := func(member string, at time.Time, ttl time.Duration, want ...string) {
		t.Helper()
		got, err := s.Heartbeat(ctx, "g", member, at, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("heartbeat of %s at +%v = %v, want %v", member, at.Sub(t0), got, want)
		}
	}
	beat("b", t0, 5*time.Second, "b")
	beat("a", t0.Add(time.Second), 5*time.Second, "a", "b")
	if got, err := s.Heartbeat(ctx, "other", "z", t0, time.Second); err != nil || !slices.Equal(got, []string{"z"}) {
		t.Fatalf("another group = %v, %v", got, err)
	}
	beat("c", t0.Add(5500*time.Millisecond), 5*time.Second, "a", "c") // b ran out at +5s
	beat("a", t0.Add(6*time.Second), 0, "c")                          // a leaves
	beat("c", t0.Add(7*time.Second), 5*time.Second, "c")

	// A watcher handing a shard over cuts its lease short with RenewLease: the lease then ends
	// at the new time, not the old one.
	if ok, err := s.AcquireLease(ctx, "watch/0", "a", t0, 10*time.Second); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}
	if err := s.RenewLease(ctx, "watch/0", "a", t0.Add(time.Second), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.AcquireLease(ctx, "watch/0", "b", t0.Add(2*time.Second), 10*time.Second); err != nil || ok {
		t.Fatalf("AcquireLease before the cut lease ended = %v, %v", ok, err)
	}
	if ok, err := s.AcquireLease(ctx, "watch/0", "b", t0.Add(3500*time.Millisecond), 10*time.Second); err != nil || !ok {
		t.Fatalf("AcquireLease after the cut lease ended = %v, %v", ok, err)
	}
}
