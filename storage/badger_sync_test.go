package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupSyncSharesTheNextSync: a lone commit waits for one sync of its own; the commits that
// end while a sync runs all share the next one, which starts as soon as the running one ends.
func TestGroupSyncSharesTheNextSync(t *testing.T) {
	var syncs atomic.Int32
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	var hold atomic.Bool
	g := &groupSync{sync: func(bool) error {
		syncs.Add(1)
		if hold.Load() {
			running <- struct{}{}
			<-release
		}
		return nil
	}}

	if err := g.wait(g.end(false)); err != nil {
		t.Fatal(err)
	}
	if syncs.Load() != 1 {
		t.Fatalf("a lone commit made %d syncs, want 1", syncs.Load())
	}

	// Commit a's sync is held running; b, c and d end meanwhile and wait. When a's sync ends,
	// one more sync covers all three.
	syncs.Store(0)
	hold.Store(true)
	var wg sync.WaitGroup
	a := g.end(false)
	wg.Go(func() {
		if err := g.wait(a); err != nil {
			t.Error(err)
		}
	})
	<-running
	hold.Store(false)
	rounds := make([]*syncRound, 3)
	for i := range rounds {
		rounds[i] = g.end(false)
		if rounds[i] == a {
			t.Fatal("a commit that ended while a sync ran was given that sync")
		}
	}
	for _, r := range rounds {
		wg.Go(func() {
			if err := g.wait(r); err != nil {
				t.Error(err)
			}
		})
	}
	close(release)
	wg.Wait()
	if n := syncs.Load(); n != 2 {
		t.Fatalf("a sync and the three commits that ended while it ran made %d syncs, want 2", n)
	}
}

// TestLogSyncFollowsMemtables: the store's syncs find Badger's memtable logs (not the DB.Sync
// fallback), sync a replaced memtable's log once more and then let go of it, and keep no
// handle of a log that Badger has deleted.
func TestLogSyncFollowsMemtables(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	logs, err := memLogs(dir)
	if err != nil || len(logs) == 0 {
		t.Fatalf("no memtable logs (%v) in %s: %v; Badger's layout changed, so every sync falls back to DB.Sync", logs, dir, err)
	}
	ctx := context.Background()
	// Write past a few memtables (memTableSize each), so that logs are replaced and flushed.
	// This goroutine is the only writer, so each sync runs in it, and b.logs can be read in
	// between.
	val := strings.Repeat("x", 64<<10)
	sealedSeen := 0
	for i := range 2 * memTableSize / len(val) {
		if _, err := b.SettingOnce(ctx, fmt.Sprint("fill-", i), []byte(val)); err != nil {
			t.Fatal(err)
		}
		sealedSeen = max(sealedSeen, len(b.logs.sealed))
	}
	if sealedSeen == 0 {
		t.Fatal("two memtables' worth written, and no sync ever saw a replaced memtable's log")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := b.SettingOnce(ctx, fmt.Sprint("tick-", time.Now().UnixNano()), []byte("x")); err != nil {
			t.Fatal(err)
		}
		logs, err = memLogs(dir)
		if err != nil {
			t.Fatal(err)
		}
		open, sealed := len(b.logs.open), len(b.logs.sealed)
		if open == 1 && sealed == len(logs)-1 {
			break // only the current log is held open; the others are synced and let go
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs %v, handles open %d, sealed %d", logs, open, sealed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for name, f := range b.logs.open {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("a handle is kept on %s (%s), which is gone: %v", name, f.f.Name(), err)
		}
	}
}

// TestReserveCounterRidesOnTheNextSync: a reservation starts no disk sync of its own; the
// durable write after it does, and covers it.
func TestReserveCounterRidesOnTheNextSync(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	before := b.sync.syncs()
	if v, ok, err := b.ReserveCounter(ctx, "active/key_1", 1, 1); err != nil || !ok || v != 1 {
		t.Fatalf("ReserveCounter = %d, %v, %v", v, ok, err)
	}
	if _, ok, err := b.ReserveCounter(ctx, "active/key_1", 1, 1); err != nil || ok {
		t.Fatalf("a reservation past the limit was taken: %v, %v", ok, err)
	}
	if n := b.sync.syncs() - before; n != 0 {
		t.Fatalf("reservations started %d syncs, want 0", n)
	}
	if _, err := b.CreateTask(ctx, Task{ID: "cgt-1", Kind: KindVideo, Account: "acme", CreatedAt: time.Now().Unix()}); err != nil {
		t.Fatal(err)
	}
	if n := b.sync.syncs() - before; n != 1 {
		t.Fatalf("a reservation and a task record made %d syncs, want 1", n)
	}
}

// TestLogSyncListsOnlyAfterAChange: a sync reads the store's directory again only after the
// directory changed (a new memtable log, a table), not at every sync.
func TestLogSyncListsOnlyAfterAChange(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	write := func(n int) {
		t.Helper()
		for i := range n {
			if _, err := b.SettingOnce(ctx, fmt.Sprint("k-", time.Now().UnixNano(), i), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(1)
	time.Sleep(relistWithin + 100*time.Millisecond) // the directory's last change is old now
	write(1)
	before := b.logs.listings
	write(20)
	if n := b.logs.listings - before; n != 0 {
		t.Fatalf("20 syncs of an unchanged directory listed it %d times, want 0", n)
	}
	if err := os.WriteFile(filepath.Join(dir, "changed.tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	write(1)
	if n := b.logs.listings - before; n != 1 {
		t.Fatalf("a sync after the directory changed listed it %d times, want 1", n)
	}
}

// A listing made in the same tick of the file system's clock as the directory's last change is
// made again, however long after: a memtable log created after it within that tick leaves the
// directory's time as it was, and must still be found (and synced).
func TestLogSyncListsAgainAfterAListingInTheChangesTick(t *testing.T) {
	dir := t.TempDir()
	l := newLogSync(nil, dir)
	changed := time.Now().Add(-time.Minute).Truncate(time.Second)
	clock := changed.Add(100 * time.Millisecond)
	l.now = func() time.Time { return clock }
	create := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// The directory's time stays in its tick, as on a file system with a coarse clock.
		if err := os.Chtimes(dir, changed, changed); err != nil {
			t.Fatal(err)
		}
	}
	create("000001" + memLogSuffix)
	if logs, err := l.memLogs(); err != nil || !slices.Equal(logs, []string{"000001" + memLogSuffix}) {
		t.Fatalf("first listing = %v, %v", logs, err)
	}
	create("000002" + memLogSuffix)
	clock = changed.Add(time.Minute)
	want := []string{"000001" + memLogSuffix, "000002" + memLogSuffix}
	if logs, err := l.memLogs(); err != nil || !slices.Equal(logs, want) {
		t.Fatalf("listing after a log was created in the same tick = %v, %v; want %v", logs, err, want)
	}
	// That listing was made well after the change: it holds until the directory changes.
	before := l.listings
	if logs, err := l.memLogs(); err != nil || !slices.Equal(logs, want) || l.listings != before {
		t.Fatalf("listing of an unchanged directory = %v, %v, listed %d times again", logs, err, l.listings-before)
	}
}

// TestGroupSyncOverlaps: with room for two syncs, a commit made while a sync runs starts its
// own at once and returns when that one ends, before the first; with room for one, it waits
// for the first to end before its own starts.
func TestGroupSyncOverlaps(t *testing.T) {
	for _, overlap := range []int{1, 2} {
		t.Run(fmt.Sprint("overlap ", overlap), func(t *testing.T) {
			release := make(chan chan struct{}, 2) // each running sync's release
			g := &groupSync{overlap: overlap, sync: func(bool) error {
				r := make(chan struct{})
				release <- r
				<-r
				return nil
			}}
			commit := func() chan error {
				done := make(chan error, 1)
				r := g.end(false)
				go func() { done <- g.wait(r) }()
				return done
			}
			a := commit()
			first := <-release // a's sync runs
			b := commit()
			// With room for one, 200 ms give a wrongful second sync its time to start; with room
			// for two, the second is waited for as long as a loaded machine may take to start it.
			wait := 200 * time.Millisecond
			if overlap == 2 {
				wait = 30 * time.Second
			}
			var second chan struct{}
			select {
			case second = <-release:
				if overlap == 1 {
					t.Fatal("a second sync started while the first ran")
				}
			case <-time.After(wait):
				if overlap == 2 {
					t.Fatal("no second sync started while the first ran, with room for two")
				}
			}
			if overlap == 2 {
				close(second)
				if err := <-b; err != nil {
					t.Fatal(err)
				}
				select {
				case <-a:
					t.Fatal("a commit returned before the sync that started after it ended")
				default:
				}
				close(first)
				if err := <-a; err != nil {
					t.Fatal(err)
				}
				return
			}
			close(first)
			if err := <-a; err != nil {
				t.Fatal(err)
			}
			select {
			case <-b:
				t.Fatal("a commit made while a sync ran returned with that sync")
			case second = <-release: // b's own sync
			}
			close(second)
			if err := <-b; err != nil {
				t.Fatal(err)
			}
			if n := g.syncs(); n != 2 {
				t.Fatalf("%d syncs, want 2", n)
			}
		})
	}
}

// TestGroupSyncErrorReachesItsCommits: a failed sync's error reaches the commits that waited
// for it, and only those.
func TestGroupSyncErrorReachesItsCommits(t *testing.T) {
	fail := errors.New("disk on fire")
	var calls atomic.Int32
	g := &groupSync{sync: func(bool) error {
		if calls.Add(1) == 1 {
			return fail
		}
		return nil
	}}
	if err := g.wait(g.end(false)); !errors.Is(err, fail) {
		t.Fatalf("wait = %v, want the sync's error", err)
	}
	if err := g.wait(g.end(false)); err != nil {
		t.Fatalf("the next sync's commit got %v", err)
	}
}

// TestLogSyncOverlappingCalls: syncs running at once across memtable replacements all succeed,
// and keep no handle of a log that Badger has deleted.
func TestLogSyncOverlappingCalls(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.sync.overlap = 3
	ctx := context.Background()
	val := strings.Repeat("x", 64<<10)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 { // 8 x 100 x 64 KiB: 50 MiB, three memtables
				if _, err := b.SettingOnce(ctx, fmt.Sprint("fill-", w, "-", i), []byte(val)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.logs.listings < 2 {
		t.Fatalf("the syncs listed the logs %d times; the memtables were never replaced", b.logs.listings)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := b.SettingOnce(ctx, fmt.Sprint("tick-", time.Now().UnixNano()), []byte("x")); err != nil {
			t.Fatal(err)
		}
		b.logs.mu.Lock()
		open := len(b.logs.open)
		b.logs.mu.Unlock()
		if open == 1 && len(deletedLogsHeld(t)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handles open %d; deleted logs still held: %v", open, deletedLogsHeld(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if held := deletedLogsHeld(t); len(held) != 0 {
		t.Fatalf("after Close the process still holds %v", held)
	}
}

// deletedLogsHeld lists this process's open files that are deleted memtable logs.
func deletedLogsHeld(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue // closed since the listing
		}
		if strings.HasSuffix(target, memLogSuffix+" (deleted)") {
			held = append(held, target)
		}
	}
	return held
}
