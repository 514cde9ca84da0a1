package storage

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// waitTaskIDs waits until no scan of the task ids runs and the filter answers, and returns it.
func waitTaskIDs(t *testing.T, b *Badger) *idFilter {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.creates.mu.Lock()
		f, ready := b.creates.ids.active, b.creates.ids.active != nil && !b.creates.ids.scanning
		b.creates.mu.Unlock()
		if ready {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatal("the scan of the task ids did not end")
		}
		time.Sleep(time.Millisecond)
	}
}

// The filter never answers "no record" for an id it holds, and answers "maybe" for few of those
// it does not when full.
func TestIDFilter(t *testing.T) {
	seed := maphash.MakeSeed()
	f := newIDFilter(0)
	for i := range f.cap {
		f.add(maphash.String(seed, fmt.Sprint("cgt-", i)))
	}
	if !f.full() {
		t.Fatalf("a filter of capacity %d holding %d ids is not full", f.cap, f.n)
	}
	for i := range f.cap {
		if !f.has(maphash.String(seed, fmt.Sprint("cgt-", i))) {
			t.Fatalf("the filter lost cgt-%d", i)
		}
	}
	maybe := 0
	for i := range f.cap {
		if f.has(maphash.String(seed, fmt.Sprint("other-", i))) {
			maybe++
		}
	}
	if rate := float64(maybe) / float64(f.cap); rate > 0.02 {
		t.Fatalf("%.2f %% of absent ids may exist; want at most 2 %%", 100*rate)
	}
}

// Without a filter (a taskCreates that no store started) every claim may have a record: the
// create reads Badger.
func TestTaskCreatesWithoutFilter(t *testing.T) {
	var c taskCreates
	for range 2 {
		if !c.claim("cgt-1") {
			t.Fatal("a claim without a filter answered that the id surely has no record")
		}
		c.release("cgt-1")
	}
}

// A create refuses the id of a record written before the store was opened, once the filter
// answers (its scan found the record) as while it is built (the create reads Badger).
func TestBadgerCreateRefusesAnIDRecordedBeforeTheOpen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b := openBook(t, dir)
	for i := range 100 {
		if _, err := b.CreateTask(ctx, Task{ID: fmt.Sprint("cgt-", i), Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: bookNow.Unix()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBook(t, dir)
	defer b.Close()
	mustRefuseCreate(t, b, "cgt-0")
	waitTaskIDs(t, b)
	for i := range 100 {
		id := fmt.Sprint("cgt-", i)
		mustRefuseCreate(t, b, id)
		h := Hold{ID: fmt.Sprint("h-", i), NewID: true, Account: "acme", Amount: 1, Deadline: bookNow.Add(time.Minute), Transient: true}
		if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 1, IdempotencyKey: h.ID}, bookNow); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
			t.Fatal(err)
		}
		if _, err := b.CreateTask(ctx, boundTask(id, h.ID)); !errors.Is(err, ErrExists) {
			t.Fatalf("creating %s again with a hold: %v, want ErrExists", id, err)
		}
	}
	if got, err := b.Task(ctx, "cgt-7"); err != nil || got.Account != "acme" {
		t.Fatalf("cgt-7 = %+v, %v; want acme's record", got, err)
	}
}

// A scan that begins while a create holds its id's claim, and ends before that create writes,
// still makes a filter that holds the id: a later create of it reads Badger and is refused.
func TestBadgerTaskIDScanKeepsTheCreatesInProgress(t *testing.T) {
	b := openBook(t, t.TempDir())
	defer b.Close()
	waitTaskIDs(t, b)
	if b.creates.claim("cgt-late") {
		t.Fatal("an empty store's filter may have cgt-late")
	}
	b.creates.mu.Lock()
	b.creates.scanLocked()
	b.creates.mu.Unlock()
	waitTaskIDs(t, b)
	// The create's write, after the scan's snapshot.
	rec, err := encodeTaskRecord(&Task{ID: "cgt-late", Kind: KindVideo, Account: "acme", Status: "queued", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(prefixTask+"cgt-late"), rec) }); err != nil {
		t.Fatal(err)
	}
	b.creates.release("cgt-late")
	mustRefuseCreate(t, b, "cgt-late")
}

// A full filter is made again by a scan, which leaves out the records that are gone; the ids
// created while it runs are kept.
func TestBadgerTaskIDFilterIsMadeAgainWhenFull(t *testing.T) {
	ctx := context.Background()
	b := openBook(t, t.TempDir())
	defer b.Close()
	first := waitTaskIDs(t, b)
	for i := range minIDFilter + 10 {
		b.creates.claim(fmt.Sprint("gone-", i)) // claimed, never written
		b.creates.release(fmt.Sprint("gone-", i))
	}
	if _, err := b.CreateTask(ctx, Task{ID: "cgt-kept", Kind: KindVideo, Account: "acme", Status: "queued"}); err != nil {
		t.Fatal(err)
	}
	second := waitTaskIDs(t, b)
	if second == first || second.n >= 100 {
		t.Fatalf("the full filter was not made again without the ids never written: %d ids", second.n)
	}
	mustRefuseCreate(t, b, "cgt-kept")
}

// mustRefuseCreate fails unless a create of the task id, by another account, is refused with
// ErrExists.
func mustRefuseCreate(t *testing.T, b *Badger, id string) {
	t.Helper()
	if _, err := b.CreateTask(context.Background(), Task{ID: id, Kind: KindVideo, Account: "other", Status: "queued"}); !errors.Is(err, ErrExists) {
		t.Fatalf("creating %s again: %v, want ErrExists", id, err)
	}
}

// Concurrent creates of the same ids, with and without holds, while scans replace the filter
// one after another: each id is created exactly once, whoever's create wins.
func TestBadgerTaskIDsCreatedOnceWhileScanning(t *testing.T) {
	ctx := context.Background()
	b := openBook(t, t.TempDir())
	defer b.Close()
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 1 << 40, IdempotencyKey: "c"}, bookNow); err != nil {
		t.Fatal(err)
	}
	const ids, creators = 300, 6
	var created [ids]atomic.Int32
	stop := make(chan struct{})
	var scans sync.WaitGroup
	scans.Add(1)
	go func() {
		defer scans.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b.creates.mu.Lock()
			if !b.creates.ids.scanning {
				b.creates.scanLocked()
			}
			b.creates.mu.Unlock()
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for c := range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				task := Task{ID: fmt.Sprint("cgt-", i), Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: bookNow.Unix()}
				if c%2 == 1 {
					task.HoldID = fmt.Sprint("h-", c, "-", i)
					h := Hold{ID: task.HoldID, NewID: true, Account: "acme", Amount: 1, Deadline: bookNow.Add(time.Minute), Transient: true}
					if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
						t.Error(err)
						return
					}
				}
				_, err := b.CreateTask(ctx, task)
				switch {
				case err == nil:
					created[i].Add(1)
				case !errors.Is(err, ErrExists):
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	scans.Wait()
	for i := range created {
		if n := created[i].Load(); n != 1 {
			t.Errorf("cgt-%d was created %d times", i, n)
		}
	}
}

// BenchmarkBadgerTaskAbsent is what a create's check of a new task id costs in a store that
// holds 300,000 task records, most of them in tables: Badger's read (read), as every create made
// it before the filter, and the filter's answer (filter), as a create now makes it for all but
// about one id in a hundred.
//
//	go test ./storage/ -run '^$' -bench BadgerTaskAbsent -cpu 1
func BenchmarkBadgerTaskAbsent(b *testing.B) {
	s := openTaskRecordsBench(b, 300_000)
	defer s.Close()
	b.Run("read", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if err := s.taskAbsent(fmt.Sprint("cgt-20261127222716-", i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("filter", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			id := fmt.Sprint("cgt-20261127222717-", i)
			s.creates.claim(id)
			s.creates.release(id)
		}
	})
}
