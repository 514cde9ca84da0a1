package storage

import (
	"context"
	"testing"
)

// RecountSlots sets each slot counter to the records that hold a slot (Active, not Finished) of
// its key: a count a crash left above them goes down, one with no records goes to 0, one below
// them goes up; other counters are left alone. A second recount changes nothing.
func TestBadgerRecountSlots(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []Task{
		{ID: "t1", KeyID: "k1", Active: true},
		{ID: "t2", KeyID: "k1", Active: true, Kind: KindImage, Status: "active"},
		{ID: "t3", KeyID: "k1", Active: true, Finished: true, Status: "succeeded"},
		{ID: "t4", KeyID: "k2"},
		{ID: "t5", KeyID: "k4", Active: true},
	} {
		task.Account, task.CreatedAt = "acme", 1_800_000_000
		if task.Kind == "" {
			task.Kind = KindVideo
		}
		if task.Status == "" {
			task.Status = "running"
		}
		if _, err := b.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	for name, v := range map[string]int64{"active/k1": 5, "active/k2": 0, "active/k3": 2, "usage/key/k1/tasks": 9} {
		if _, _, err := b.AddCounter(ctx, name, v, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, err = OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	changed, err := b.RecountSlots(ctx, "active/")
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 3 || changed["active/k1"] != -3 || changed["active/k3"] != -2 || changed["active/k4"] != 1 {
		t.Fatalf("changed = %v; want k1 -3, k3 -2, k4 +1", changed)
	}
	for name, want := range map[string]int64{"active/k1": 2, "active/k2": 0, "active/k3": 0, "active/k4": 1, "usage/key/k1/tasks": 9} {
		if got, err := b.Counter(ctx, name); err != nil || got != want {
			t.Fatalf("%s = %d, %v; want %d", name, got, err, want)
		}
	}
	if changed, err := b.RecountSlots(ctx, "active/"); err != nil || len(changed) != 0 {
		t.Fatalf("a second recount changed %v, %v; want nothing", changed, err)
	}
}
