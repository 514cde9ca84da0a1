package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A durable change whose write fails is taken out of its counter, in memory and on disk, though a
// later change built on it was made meanwhile: its caller was told it failed, so it must not count
// (an active-task slot reserved by a failed create would never be released).
func TestCounterChangeThatFailedIsTakenOut(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, _, err := b.ReserveCounter(ctx, "slots", 5, -1); err != nil {
		t.Fatal(err)
	}
	// The next write is held back, and fails after the one after it was written.
	held := make(chan func(error), 1)
	first := true
	b.counters.commit = func(txn *badger.Txn, done func(error)) {
		if first {
			first = false
			held <- done
			return
		}
		txn.CommitWith(done)
	}
	failedErr := make(chan error, 1)
	go func() {
		_, _, err := b.AddCounter(ctx, "slots", 1, -1)
		failedErr <- err
	}()
	failWrite := <-held
	if v, ok, err := b.ReserveCounter(ctx, "slots", 10, -1); err != nil || !ok || v != 16 {
		t.Fatalf("change after the failing one = %d, %v, %v; want 16 (built on it)", v, ok, err)
	}
	failWrite(errors.New("disk failed"))
	if err := <-failedErr; err == nil {
		t.Fatal("the failed change reported no error")
	}
	if v, err := b.Counter(ctx, "slots"); err != nil || v != 15 {
		t.Fatalf("counter = %d, %v; want 15 (without the failed change)", v, err)
	}
	// The corrected value is written at once, without waiting for the counter's next change.
	waitStored(t, b, "slots", 15)
	if v, ok, err := b.ReserveCounter(ctx, "slots", -15, -1); err != nil || !ok || v != 0 {
		t.Fatalf("releasing every slot = %d, %v, %v; want 0", v, ok, err)
	}
}

// A counter change that is written but whose disk sync fails is answered as it then stands: a
// charge is taken back and fails (its caller treats it as not made), a give-back stays and
// succeeds (its caller would retry a failed one, giving back again each time), a request for a
// sync alone fails. The counter then holds what the callers were told, in memory and in the
// store.
func TestCounterChangeWhoseSyncFailedIsToldAsItStands(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if v, ok, err := b.AddCounter(ctx, "quota/k", 10, -1); err != nil || !ok || v != 10 {
		t.Fatalf("AddCounter = %d, %v, %v", v, ok, err)
	}
	diskFailed := errors.New("disk failed")
	synced := b.sync.sync
	b.sync.sync = func(bool) error { return diskFailed }
	want := func(stage string, value int64) {
		t.Helper()
		if v, err := b.Counter(ctx, "quota/k"); err != nil || v != value {
			t.Fatalf("%s: counter = %d, %v; want %d", stage, v, err, value)
		}
		waitStored(t, b, "quota/k", value)
	}

	if _, _, err := b.AddCounter(ctx, "quota/k", 3, -1); !errors.Is(err, diskFailed) {
		t.Fatalf("a charge whose sync failed = %v; want the sync's error", err)
	}
	want("after a charge whose sync failed", 10)
	if v, ok, err := b.AddCounter(ctx, "quota/k", -4, -1); err != nil || !ok || v != 6 {
		t.Fatalf("a give-back whose sync failed = %d, %v, %v; want 6, true, nil", v, ok, err)
	}
	want("after a give-back whose sync failed", 6)
	if _, _, err := b.AddCounter(ctx, "quota/k", 0, -1); !errors.Is(err, diskFailed) {
		t.Fatalf("a sync alone that failed = %v; want the sync's error", err)
	}
	want("after a sync alone", 6)

	b.sync.sync = synced
	if v, ok, err := b.AddCounter(ctx, "quota/k", 1, -1); err != nil || !ok || v != 7 {
		t.Fatalf("AddCounter once the disk works = %d, %v, %v; want 7", v, ok, err)
	}
	want("once the disk works", 7)
}

// waitStored waits until the store (not the cache) holds value for a counter; writes handed to
// Badger are applied in the background.
func waitStored(t *testing.T, b *Badger, name string, value int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var stored int64
		if err := b.db.View(func(txn *badger.Txn) error {
			var err error
			stored, err = txnCounter(txn, name)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if stored == value {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored counter %s = %d; want %d", name, stored, value)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
