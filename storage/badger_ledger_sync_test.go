package storage

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A hold and the end of an unbound hold do not wait for a disk sync (a crash that loses them
// loses a charge, never makes one twice); a credit and the end of a bound hold do, and a task's
// create binds its hold in its own durable commit, after which BindHold writes nothing.
func TestBadgerLedgerWaitsForSyncsOnlyWhereACrashWouldHarm(t *testing.T) {
	ctx, now := context.Background(), time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	b, err := OpenBadger(t.TempDir(), BadgerOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.lazy.delay = time.Hour // no lazy sync during the test: every sync counted is waited for
	steps := []struct {
		name  string
		do    func() error
		syncs uint64 // started by the step
	}{
		{"credit", func() error {
			_, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100, IdempotencyKey: "c"}, now)
			return err
		}, 1},
		{"hold", func() error {
			_, _, err := b.Hold(ctx, Hold{ID: "h1", Account: "acme", Amount: 10, Deadline: now.Add(time.Hour)}, now)
			return err
		}, 0},
		{"settle an unbound hold", func() error { _, err := b.Settle(ctx, "h1", 4, now); return err }, 0},
		{"hold for a task", func() error {
			_, _, err := b.Hold(ctx, Hold{ID: "h2", Account: "acme", Amount: 20, Deadline: now.Add(time.Hour)}, now)
			return err
		}, 0},
		{"create the task", func() error {
			_, err := b.CreateTask(ctx, Task{ID: "task-2", Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: now.Unix(), HoldID: "h2"})
			return err
		}, 1},
		{"bind after the create", func() error { return b.BindHold(ctx, "h2", "task-2") }, 0},
		{"settle the task's hold", func() error { _, err := b.Settle(ctx, "h2", 15, now); return err }, 1},
	}
	for _, s := range steps {
		before := b.sync.syncs()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := b.sync.syncs() - before; got != s.syncs {
			t.Errorf("%s started %d disk syncs; want %d", s.name, got, s.syncs)
		}
	}
	h, err := b.HoldByID(ctx, "h2")
	if err != nil || !h.Bound || h.Ref != "task-2" || h.State != HoldSettled {
		t.Fatalf("the task's hold = %+v, %v", h, err)
	}
	if bal, err := b.Balance(ctx, "acme"); err != nil || bal.Amount != 100-4-15 || bal.Held != 0 {
		t.Fatalf("balance %+v, %v", bal, err)
	}
}

// The end of a bound hold waits for its own disk sync and sets no lazy one besides.
func TestBadgerEndOfABoundHoldSetsNoLazySync(t *testing.T) {
	ctx, now := context.Background(), time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	b, err := OpenBadger(t.TempDir(), BadgerOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.lazy.delay = time.Hour
	if _, _, err := b.Hold(ctx, Hold{ID: "h", Account: "acme", Amount: 10, Deadline: now.Add(time.Hour), Bound: true}, now); err != nil {
		t.Fatal(err)
	}
	b.lazy.pending.Store(false) // as if the hold's lazy sync had begun
	before := b.sync.syncs()
	if _, err := b.Settle(ctx, "h", 4, now); err != nil {
		t.Fatal(err)
	}
	if got := b.sync.syncs() - before; got != 1 {
		t.Errorf("the settle started %d disk syncs; want 1", got)
	}
	if b.lazy.pending.Load() {
		t.Error("the settle of a bound hold, synced, set a lazy sync too")
	}
}

// A lazy ledger write is synced without any later write, within lazySyncDelay; and, like every
// commit, it is in Badger's memtable log at once: a copy of the store's files taken while the
// store is open (as a killed process leaves them) has it.
func TestBadgerLazyLedgerWritesAreSyncedAndSurviveTheProcess(t *testing.T) {
	dir := t.TempDir()
	ctx, now := context.Background(), time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	b, err := OpenBadger(dir, BadgerOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.lazy.delay = 10 * time.Millisecond
	if _, _, err := b.Hold(ctx, Hold{ID: "h1", Account: "acme", Amount: 10, Deadline: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); b.sync.syncs() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no disk sync followed the lazy hold")
		}
	}

	b.lazy.delay = time.Hour // the settlement stays unsynced
	if _, err := b.Settle(ctx, "h1", 7, now); err != nil {
		t.Fatal(err)
	}
	killed := t.TempDir()
	if err := copyStoreFiles(dir, killed); err != nil {
		t.Fatal(err)
	}
	c, err := OpenBadger(killed, BadgerOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h, err := c.HoldByID(ctx, "h1"); err != nil || h.State != HoldSettled {
		t.Fatalf("the hold in the killed process's files = %+v, %v; want settled", h, err)
	}
	if bal, err := c.Balance(ctx, "acme"); err != nil || bal.Amount != -7 || bal.Held != 0 {
		t.Fatalf("balance in the killed process's files %+v, %v", bal, err)
	}
}

// copyStoreFiles copies the files of a store directory (not its lock, which a killed process
// no longer holds).
func copyStoreFiles(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, d.Name()), data, 0o600)
	})
}
