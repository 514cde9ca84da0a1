package storage

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// NoteReads' lease check from memory agrees with Badger when Badger drops a lease record at
// its TTL (a term and a minute after its last write, by the wall clock): the lease is lost, in
// the book as in Badger, and the refused group's reads are not in its read log.
func TestBadgerNoteReadsAgreesWithBadgerAtALeasesTTL(t *testing.T) {
	ctx := context.Background()
	s, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Unix(1_800_000_000, 0)
	// A term of a minute less one second: Badger keeps the record for one second.
	if ok, err := s.AcquireLease(ctx, "s/0", "a", t0, -59*time.Second); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}
	groups := []ShardReads{{Lease: "s/0", Log: "r/0", IDs: []string{"x"}}}
	if lost, err := s.NoteReads(ctx, "a", t0, time.Hour, groups); err != nil || len(lost) != 0 {
		t.Fatalf("NoteReads while the record is kept: lost %v, %v", lost, err)
	}
	inBadger := func() bool {
		err := s.db.View(func(txn *badger.Txn) error {
			_, err := txn.Get([]byte(prefixLease + "s/0"))
			return err
		})
		if err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for inBadger() {
		if time.Now().After(deadline) {
			t.Fatal("Badger kept the lease record for 5 s past a 1 s TTL")
		}
		time.Sleep(50 * time.Millisecond)
	}
	at := t0.Add(time.Minute)
	if lost, err := s.NoteReads(ctx, "a", at, time.Hour, groups); err != nil || !slices.Equal(lost, []int{0}) {
		t.Fatalf("NoteReads after Badger dropped the lease: lost %v, %v; want [0]", lost, err)
	}
	reads, err := s.RecentReads(ctx, "r/0", at)
	if err != nil || len(reads) != 0 {
		t.Fatalf("RecentReads after a refused note = %v, %v; want none", reads, err)
	}
}
