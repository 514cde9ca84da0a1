package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A reservation has no transaction of its own: it is written by the next durable commit, in the
// same Badger transaction (one commit version) as the task record that commit writes, for a
// plain create (commitSerial) and for a priced one (the ledger's batch).
func TestReservationIsWrittenWithTheTaskRecord(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	now := counterNow
	if _, err := b.Credit(ctx, Credit{Account: "acct", Amount: 1_000_000, IdempotencyKey: "c"}, now); err != nil {
		t.Fatal(err)
	}
	for _, priced := range []bool{false, true} {
		name := "active/key_plain"
		if priced {
			name = "active/key_priced"
		}
		if v, ok, err := b.ReserveCounter(ctx, name, 1, 5); err != nil || !ok || v != 1 {
			t.Fatalf("ReserveCounter = %d, %v, %v", v, ok, err)
		}
		if _, _, found := storedKey(t, b, prefixCounter+name); found {
			t.Fatalf("priced %v: the reservation was written before any durable commit", priced)
		}
		task := Task{ID: "task_" + name[len("active/"):], Kind: KindVideo, Account: "acct", KeyID: "key_1",
			Provider: "sim", Model: "m", Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(),
			ExpiresAt: now.Add(time.Hour).Unix(), Active: true}
		if priced {
			hold := Hold{ID: "hold_1", NewID: true, Account: "acct", KeyID: "key_1", Model: "m", Amount: 500,
				Deadline: now.Add(DefaultHoldDeadline), Transient: true}
			if _, _, err := b.Hold(ctx, hold, now); err != nil {
				t.Fatal(err)
			}
			task.HoldID, task.HoldAmount = hold.ID, hold.Amount
		}
		if _, err := b.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		counter, counterVersion, found := storedKey(t, b, prefixCounter+name)
		if !found || counter != 1 {
			t.Fatalf("priced %v: stored counter = %d (found %v); want 1 once the create is acknowledged", priced, counter, found)
		}
		_, taskVersion, found := storedKey(t, b, prefixTask+task.ID)
		if !found || taskVersion != counterVersion {
			t.Fatalf("priced %v: task record version %d (found %v), counter version %d; want one transaction",
				priced, taskVersion, found, counterVersion)
		}
	}
}

// A durable counter change writes the reservations of other counters made before it.
func TestReservationIsWrittenWithADurableChange(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, _, err := b.ReserveCounter(ctx, "a", 2, -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AddCounter(ctx, "b", 1, -1); err != nil {
		t.Fatal(err)
	}
	if v, _, found := storedKey(t, b, prefixCounter+"a"); !found || v != 2 {
		t.Fatalf("stored a = %d (found %v); want 2", v, found)
	}
}

// The reservations that no durable commit wrote are written at Close.
func TestReservationIsWrittenAtClose(t *testing.T) {
	dir := t.TempDir()
	b := openCounters(t, dir)
	ctx := context.Background()
	if _, _, err := b.ReserveCounter(ctx, "slots", 3, -1); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.ReserveCounter(ctx, "slots", 1, -1); !errors.Is(err, badger.ErrDBClosed) {
		t.Fatalf("ReserveCounter after Close = %v; want ErrDBClosed", err)
	}
	b = openCounters(t, dir)
	defer b.Close()
	if v, err := b.Counter(ctx, "slots"); err != nil || v != 3 {
		t.Fatalf("counter after reopening = %d, %v; want 3", v, err)
	}
}

// A commit that carried reservations and failed leaves them to the next one.
func TestReservationOfAFailedCommitIsWrittenByTheNext(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, _, err := b.ReserveCounter(ctx, "slots", 3, -1); err != nil {
		t.Fatal(err)
	}
	diskFailed := errors.New("disk failed")
	b.counters.commit = func(txn *badger.Txn, done func(error)) {
		txn.Discard()
		done(diskFailed)
	}
	now := counterNow
	task := Task{ID: "task_1", Kind: KindVideo, Account: "acct", KeyID: "key_1", Provider: "sim", Model: "m",
		Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}
	if _, err := b.CreateTask(ctx, task); !errors.Is(err, diskFailed) {
		t.Fatalf("CreateTask with a failing write = %v; want the write's error", err)
	}
	if _, _, found := storedKey(t, b, prefixCounter+"slots"); found {
		t.Fatal("a failed commit's reservation is stored")
	}
	b.counters.commit = nil
	task.ID = "task_2"
	if _, err := b.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if v, _, found := storedKey(t, b, prefixCounter+"slots"); !found || v != 3 {
		t.Fatalf("stored counter = %d (found %v); want 3, written by the next commit", v, found)
	}
}

// Reservations, task creates and durable releases of one counter from many goroutines at once
// leave the stored value (written by whichever commits carried it, in any order) equal to the
// cached one: the last write Badger applied is the latest value, before and after reopening.
func TestReservationsUnderConcurrencyAreStoredExactly(t *testing.T) {
	dir := t.TempDir()
	b := openCounters(t, dir)
	ctx := context.Background()
	now := counterNow
	const workers, each = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, ok, err := b.ReserveCounter(ctx, "active/k", 1, -1); err != nil || !ok {
					errs <- fmt.Errorf("reserve: %v, %v", ok, err)
					return
				}
				task := Task{ID: fmt.Sprintf("task_%d_%d", w, i), Kind: KindVideo, Account: "acct", KeyID: "k",
					Provider: "sim", Model: "m", Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(),
					ExpiresAt: now.Add(time.Hour).Unix(), Active: true}
				if _, err := b.CreateTask(ctx, task); err != nil {
					errs <- err
					return
				}
				if i%2 == 1 { // every other task finishes: its slot is given back, durably
					if _, _, err := b.AddCounter(ctx, "active/k", -1, -1); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const want = workers * each / 2
	if v, err := b.Counter(ctx, "active/k"); err != nil || v != want {
		t.Fatalf("cached counter = %d, %v; want %d", v, err, want)
	}
	// The last commit was a task create or a release, each carrying the latest value.
	if v, _, found := storedKey(t, b, prefixCounter+"active/k"); !found || v != want {
		t.Fatalf("stored counter = %d (found %v); want %d", v, found, want)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openCounters(t, dir)
	defer b.Close()
	if v, err := b.Counter(ctx, "active/k"); err != nil || v != want {
		t.Fatalf("counter after reopening = %d, %v; want %d", v, err, want)
	}
}

// storedKey reads key from Badger (not the caches): its value as a counter (0 for another
// record), its commit version, and whether it is there.
func storedKey(t *testing.T, b *Badger, key string) (int64, uint64, bool) {
	t.Helper()
	var v int64
	var version uint64
	err := b.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(key))
		if err != nil {
			return err
		}
		version = item.Version()
		if len(key) > len(prefixCounter) && key[:len(prefixCounter)] == prefixCounter {
			v, _, err = txnInt64(txn, key)
		}
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, version, true
}

// counterNow is the clock of the stores openCounters opens, and of the records their tests write.
var counterNow = time.Unix(1_700_000_000, 0)

// openCounters opens the Badger store in dir on the clock counterNow.
func openCounters(t *testing.T, dir string) *Badger {
	t.Helper()
	b, err := OpenBadger(dir, BadgerOptions{Now: func() time.Time { return counterNow }})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
