package storage

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// TestBigValueSyncedByItsOwnRound: a sync that starts while a commit writing a value to the
// value log is still in its transaction (so before the value is in the log) must not count that
// value as synced: the commit's own sync syncs the value log.
func TestBigValueSyncedByItsOwnRound(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var valueLogSyncs atomic.Int32
	dbSync := b.logs.dbSync
	b.logs.dbSync = func() error { valueLogSyncs.Add(1); return dbSync() }
	ctx := context.Background()
	big := strings.Repeat("v", valueThreshold)
	err = b.update(ctx, func(txn *badger.Txn) error {
		if err := setEntry(txn, prefixSetting+"big", []byte(big), 0); err != nil {
			return err
		}
		// Another commit's sync round runs now, before Badger has written anything of this one.
		if err := b.sync.wait(b.sync.end(false)); err != nil {
			return err
		}
		valueLogSyncs.Store(0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := valueLogSyncs.Load(); n == 0 {
		t.Fatal("the sync acknowledging a value-log write did not sync the value log")
	}

	// A commit of small values alone does not sync the value log.
	valueLogSyncs.Store(0)
	if err := b.update(ctx, func(txn *badger.Txn) error {
		return setEntry(txn, prefixSetting+"small", []byte("v"), 0)
	}); err != nil {
		t.Fatal(err)
	}
	if ownLogSync {
		if n := valueLogSyncs.Load(); n != 0 {
			t.Fatalf("a small write made %d DB.Sync calls, want 0", n)
		}
	}
}

// TestCloseWaitsForDurableCommits: Close racing a commit that is written but not yet synced
// neither panics nor hangs: Close waits for the commit, which is synced and acknowledged, and
// commits after Close fail with badger.ErrDBClosed.
func TestCloseWaitsForDurableCommits(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	b.afterWrite = func() {
		b.afterWrite = nil
		go func() { closed <- b.Close() }()
		// Give Close the time to get as far as it may before this commit syncs.
		for !b.commits.closing() {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
	}
	committed := make(chan error, 1)
	go func() {
		committed <- b.update(context.Background(), func(txn *badger.Txn) error {
			return setEntry(txn, prefixSetting+"s", []byte("v"), 0)
		})
	}()
	select {
	case err := <-committed:
		if err != nil {
			t.Fatalf("a commit written before Close was called failed: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a commit racing Close hangs")
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close hangs")
	}
	err = b.update(context.Background(), func(txn *badger.Txn) error {
		return setEntry(txn, prefixSetting+"s", []byte("w"), 0)
	})
	if !errors.Is(err, badger.ErrDBClosed) {
		t.Fatalf("a commit after Close = %v, want ErrDBClosed", err)
	}
	if _, _, err := b.AddCounter(context.Background(), "c", 1, -1); !errors.Is(err, badger.ErrDBClosed) {
		t.Fatalf("a counter change after Close = %v, want ErrDBClosed", err)
	}
}

// TestGroupSyncPanicReachesItsCommits: a sync that panics fails its commits instead of
// crashing or leaving them waiting, and frees its slot for the next sync.
func TestGroupSyncPanicReachesItsCommits(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	g := &groupSync{sync: func(bool) error {
		if fail.Load() {
			panic("nil memtable")
		}
		return nil
	}}
	if err := g.wait(g.end(false)); err == nil {
		t.Fatal("a sync that panicked was acknowledged")
	}
	fail.Store(false)
	done := make(chan error, 1)
	go func() {
		done <- g.wait(g.end(false))
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the sync after a panicked one never ran")
	}
}
