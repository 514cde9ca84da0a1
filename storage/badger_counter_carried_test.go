package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A reservation that another durable commit carried is not written until that commit is: a
// task create made while it is in flight writes the slot with its record, so that a kill of the
// process then keeps both, though the other commit fails (here it conflicts, as commitSerial's
// transactions do when a record they read changes, and is tried again only after the create).
func TestReservationCarriedByACommitInFlightIsWrittenWithTheCreate(t *testing.T) {
	dir := t.TempDir()
	b := openCounters(t, dir)
	defer b.Close()
	ctx := context.Background()
	if _, ok, err := b.ReserveCounter(ctx, "active/k", 1, 5); err != nil || !ok {
		t.Fatalf("ReserveCounter = %v, %v", ok, err)
	}
	// The first commit that carries counters is held once Badger has answered it.
	answered := make(chan error, 1)
	release := make(chan struct{})
	first := true
	b.counters.commit = func(txn *badger.Txn, done func(error)) {
		if !first {
			txn.CommitWith(done)
			return
		}
		first = false
		txn.CommitWith(func(err error) {
			answered <- err
			<-release
			done(err)
		})
	}
	// Another request's durable commit, which read a key that changes before it commits.
	other := make(chan error, 1)
	go func() {
		attempt := 0
		other <- b.update(ctx, func(txn *badger.Txn) error {
			attempt++
			if _, err := txn.Get([]byte("x/read")); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
				return err
			}
			if attempt == 1 {
				if err := b.db.Update(func(t *badger.Txn) error { return t.Set([]byte("x/read"), []byte("1")) }); err != nil {
					return err
				}
			}
			return txn.Set([]byte("x/written"), []byte("1"))
		})
	}()
	if err := <-answered; !errors.Is(err, badger.ErrConflict) {
		t.Fatalf("the other commit = %v; want a conflict", err)
	}

	now := time.Unix(1_700_000_000, 0)
	task := Task{ID: "task_1", Kind: KindVideo, Account: "acct", KeyID: "k", Provider: "sim", Model: "m",
		Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), Active: true}
	if _, err := b.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	killed := t.TempDir()
	if err := copyStoreFiles(dir, killed); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-other; err != nil {
		t.Fatalf("the other commit, tried again = %v", err)
	}

	c, err := OpenBadger(killed, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Task(ctx, task.ID); err != nil {
		t.Fatalf("the acknowledged task after the kill: %v", err)
	}
	if v, err := c.Counter(ctx, "active/k"); err != nil || v != 1 {
		t.Fatalf("active slots after the kill = %d, %v; want 1, the acknowledged task's", v, err)
	}
}

// A durable commit covers every reservation made before it, also when they are more than one
// Badger transaction takes (the meter reserves a usage counter per active key and account, and
// confirms them with one durable change): the ones its own transaction left are written before
// it is acknowledged.
func TestReservationsMoreThanATransactionTakesAreWrittenBeforeTheAcknowledgement(t *testing.T) {
	dir := t.TempDir()
	b := openCounters(t, dir)
	defer b.Close()
	ctx := context.Background()
	// Badger refuses a transaction of more than 15 % of a memtable over the size of a skiplist
	// node (about 52,000 entries with 32 MiB memtables); below maxCachedCounters.
	const n = 60_000
	for i := range n {
		if _, _, err := b.ReserveCounter(ctx, fmt.Sprintf("usage/requests/key_%d", i), 1, -1); err != nil {
			t.Fatal(err)
		}
	}
	for _, durable := range []func() error{
		func() error { _, _, err := b.AddCounter(ctx, "usage/requests/key_0", 0, -1); return err },
		func() error {
			now := time.Unix(1_700_000_000, 0)
			_, err := b.CreateTask(ctx, Task{ID: "task_1", Kind: KindVideo, Account: "acct", KeyID: "k", Provider: "sim", Model: "m",
				Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()})
			return err
		},
	} {
		if err := durable(); err != nil {
			t.Fatal(err)
		}
		missing := 0
		if err := b.db.View(func(txn *badger.Txn) error {
			for i := range n {
				_, err := txn.Get([]byte(prefixCounter + fmt.Sprintf("usage/requests/key_%d", i)))
				if errors.Is(err, badger.ErrKeyNotFound) {
					missing++
				} else if err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if missing != 0 {
			t.Fatalf("%d of %d reservations not written when a durable commit after them returned", missing, n)
		}
		for i := range n { // again, for the next durable commit
			if _, _, err := b.ReserveCounter(ctx, fmt.Sprintf("usage/requests/key_%d", i), 1, -1); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.db.DropPrefix([]byte(prefixCounter)); err != nil {
			t.Fatal(err)
		}
	}
}

// A charge whose disk sync fails while Close waits for it is taken back all the same: Close
// refuses new commits, not the take-back of one it let in, which its caller was told failed.
func TestChargeWhoseSyncFailedDuringCloseIsTakenBack(t *testing.T) {
	dir := t.TempDir()
	b := openCounters(t, dir)
	ctx := context.Background()
	if _, _, err := b.AddCounter(ctx, "quota/k", 10, -1); err != nil {
		t.Fatal(err)
	}
	diskFailed := errors.New("disk failed")
	syncing := make(chan struct{})
	b.sync.sync = func(bool) error {
		close(syncing)
		deadline := time.Now().Add(30 * time.Second)
		for !b.commits.closing() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return diskFailed
	}
	charged := make(chan error, 1)
	go func() {
		_, _, err := b.AddCounter(ctx, "quota/k", 3, -1)
		charged <- err
	}()
	<-syncing
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	if err := <-charged; !errors.Is(err, diskFailed) {
		t.Fatalf("a charge whose sync failed = %v; want the sync's error", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	b = openCounters(t, dir)
	defer b.Close()
	if v, err := b.Counter(ctx, "quota/k"); err != nil || v != 10 {
		t.Fatalf("counter after reopening = %d, %v; want 10, without the charge its caller was told failed", v, err)
	}
}
