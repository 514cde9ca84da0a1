package storage

import (
	"context"
	"slices"
	"testing"
	"time"
)

// The read logs' lease check (NoteReads) reads the leases from memory: a lease that the process
// before wrote, which this process has not, is read from Badger; the leases this process writes
// are seen at once, taken, renewed and released.
func TestBadgerNoteReadsChecksLeasesOfTheProcessBefore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Unix(1_800_000_000, 0)
	s, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.AcquireLease(ctx, "s/0", "before", t0, time.Hour); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = OpenBadger(dir, BadgerOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	groups := []ShardReads{{Lease: "s/0", Log: "r/0", IDs: []string{"x"}}, {Lease: "s/1", Log: "r/1", IDs: []string{"y"}}}
	note := func(owner string, want ...int) {
		t.Helper()
		lost, err := s.NoteReads(ctx, owner, t0, time.Minute, groups)
		if err != nil || !slices.Equal(lost, want) {
			t.Fatalf("NoteReads(%s) lost %v, %v; want %v", owner, lost, err, want)
		}
	}
	note("before", 1)
	note("now", 0, 1)
	if ok, err := s.AcquireLease(ctx, "s/1", "now", t0, time.Hour); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}
	note("now", 0)
	// s/0 runs out (by the lease's clock) and is taken; its old owner is refused.
	if ok, err := s.AcquireLease(ctx, "s/0", "now", t0.Add(2*time.Hour), time.Hour); err != nil || !ok {
		t.Fatalf("AcquireLease of a lease run out = %v, %v", ok, err)
	}
	note("now")
	note("before", 0, 1)
	// s/1 ran out by then too: its renewal is refused, but nobody took it, so it is still now's.
	if lost, err := s.RenewLeases(ctx, []string{"s/0", "s/1"}, "now", t0.Add(2*time.Hour), time.Hour); err != nil || !slices.Equal(lost, []int{1}) {
		t.Fatalf("RenewLeases lost %v, %v; want [1]", lost, err)
	}
	note("now")
	if err := s.ReleaseLease(ctx, "s/1", "now"); err != nil {
		t.Fatal(err)
	}
	note("now", 1)
}
