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
