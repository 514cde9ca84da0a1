package storage

import (
	"context"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// TestBadgerReadsCompressedTablesOfEarlierVersions opens a store whose tables an earlier version
// wrote, compressed (Snappy, read through a block cache) as OpenBadger writes them: whatever
// compression and caches OpenBadger's options name, such tables must stay readable (Badger
// records each table's compression in its manifest; a store opened with compression off and
// no block cache still reads them). Records, listing and the open-task index all come from the
// table, and a change to a record read from it is stored.
func TestBadgerReadsCompressedTablesOfEarlierVersions(t *testing.T) {
	dir := t.TempDir()
	old, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).
		WithCompression(options.Snappy).WithBlockCacheSize(8 << 20).WithIndexCacheSize(4 << 20))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	video := Task{ID: "cgt-old-video", Kind: KindVideo, Account: "acct", KeyID: "key_1", Provider: "sim",
		Model: "m", Status: "queued", CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), Version: 1}
	image := video
	image.ID, image.Kind, image.Status = "img-old", KindImage, "succeeded"
	image.markFinished(now)
	for _, task := range []Task{video, image} {
		if err := old.Update(func(txn *badger.Txn) error { return (&Badger{now: time.Now}).putTask(txn, task, nil) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Close(); err != nil { // writes the memtable to a compressed level-0 table
		t.Fatal(err)
	}

	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(b.db.Tables()) == 0 {
		t.Fatal("the earlier version's writes are in no table: the test reads no compressed table")
	}
	ctx := context.Background()
	for _, want := range []Task{video, image} {
		got, err := b.Task(ctx, want.ID)
		if err != nil || got.ID != want.ID || got.Kind != want.Kind || got.Status != want.Status {
			t.Errorf("reading %s written compressed: %+v, %v", want.ID, got, err)
		}
	}
	page, err := b.ListTasks(ctx, "acct", TaskQuery{PageSize: 10})
	if err != nil || page.Total != 2 {
		t.Errorf("listing the tasks written compressed: %+v, %v", page, err)
	}
	var open []string
	if err := b.UnfinishedTasks(ctx, func(id string) bool { open = append(open, id); return true }); err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0] != video.ID {
		t.Errorf("unfinished tasks written compressed: %v, want [%s]", open, video.ID)
	}
	video.Status = "running"
	if _, err := b.ReplaceTask(ctx, video); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Task(ctx, video.ID); err != nil || got.Status != "running" || got.Version != 2 {
		t.Errorf("after a change: %+v, %v", got, err)
	}
}

// TestBadgerCreateWritesOnlyNeededEntries counts the entries (tombstones included) that creates
// leave under the open-task marker prefix: a video task's create writes its marker, a record
// finished from the start (an image) writes nothing there, and finishing the video task deletes
// its marker.
func TestBadgerCreateWritesOnlyNeededEntries(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	now := time.Now()
	video := Task{ID: "cgt-entries", Kind: KindVideo, Account: "acct", Status: "queued",
		CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}
	image := video
	image.ID, image.Kind, image.Status = "img-entries", KindImage, "succeeded"
	for _, task := range []Task{video, image} {
		if _, err := b.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if got := markerEntries(t, b); len(got) != 1 || got[0] != prefixOpenTask+video.ID+" set" {
		t.Errorf("after the creates, open-task marker entries %q, want only the video task's marker", got)
	}
	video.Version, video.Status = 1, "succeeded"
	if _, err := b.ReplaceTask(ctx, video); err != nil {
		t.Fatal(err)
	}
	if got := markerEntries(t, b); len(got) != 2 || got[0] != prefixOpenTask+video.ID+" deleted" {
		t.Errorf("after finishing the video task, open-task marker entries %q, want its deletion over its marker", got)
	}
}

// markerEntries lists every version of every entry under the open-task marker prefix, newest
// first for each key, as "key set" or "key deleted".
func markerEntries(t *testing.T, b *Badger) []string {
	t.Helper()
	var entries []string
	err := b.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.AllVersions = true
		opts.Prefix = []byte(prefixOpenTask)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			state := " set"
			if it.Item().IsDeletedOrExpired() {
				state = " deleted"
			}
			entries = append(entries, string(it.Item().Key())+state)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestBadgerTablesReadAcrossCompression: a store whose tables were written with compression on
// opens and reads with it off, and the other way round (Badger records each table's compression;
// the block cache a compressed table is read through is only a cache). A priced request's hold
// and settlement are written, the store closed (its memtable written to a table), and the
// balance and the ledger entries read back, then written again, under the other setting.
func TestBadgerTablesReadAcrossCompression(t *testing.T) {
	uncompressed := func(o badger.Options) badger.Options {
		return o.WithCompression(options.None).WithBlockCacheSize(0)
	}
	compressed := func(o badger.Options) badger.Options { return o.WithCompression(options.Snappy) }
	for _, order := range []struct {
		name        string
		write, read func(badger.Options) badger.Options
	}{{"on_then_off", compressed, uncompressed}, {"off_then_on", uncompressed, compressed}} {
		t.Run(order.name, func(t *testing.T) {
			ctx, now, dir := context.Background(), time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC), t.TempDir()
			settle := func(s *Badger, id string) {
				t.Helper()
				h := Hold{ID: id, Account: "acct", KeyID: "key_1", Model: "m", Amount: 500,
					Deadline: now.Add(DefaultHoldDeadline), Transient: true}
				if _, _, err := s.Hold(ctx, h, now); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Settle(ctx, id, 120, now); err != nil {
					t.Fatal(err)
				}
			}
			s, err := openBadger(dir, BadgerOptions{Now: func() time.Time { return now }}, order.write)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Credit(ctx, Credit{Account: "acct", Amount: 10_000, IdempotencyKey: "c"}, now); err != nil {
				t.Fatal(err)
			}
			settle(s, "hold_1")
			if err := s.Close(); err != nil { // writes the memtable to a level-0 table
				t.Fatal(err)
			}
			s, err = openBadger(dir, BadgerOptions{Now: func() time.Time { return now }}, order.read)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			}()
			if len(s.db.Tables()) == 0 {
				t.Fatal("the first setting's writes are in no table: the test reads no table of it")
			}
			if b, err := s.Balance(ctx, "acct"); err != nil || b.Amount != 10_000-120 || b.Held != 0 {
				t.Fatalf("balance read under the other setting: %+v, %v; want 9880, nothing held", b, err)
			}
			settle(s, "hold_2")
			entries, _, err := s.LedgerPage(ctx, "acct", "", 10)
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for _, e := range entries {
				sum += e.Amount
			}
			if b, err := s.Balance(ctx, "acct"); err != nil || b.Amount != 10_000-240 || sum != b.Amount {
				t.Fatalf("after a second request: balance %+v, %v; the entries (%d) sum to %d", b, err, len(entries), sum)
			}
		})
	}
}
