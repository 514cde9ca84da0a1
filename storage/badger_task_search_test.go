package storage

import (
	"context"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A Badger store written before the index of all tasks existed puts its tasks in it when opened.
func TestBadgerTaskCreatedIndexBuiltOnOpen(t *testing.T) {
	dir, ctx := t.TempDir(), context.Background()
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, acct := range []string{"alice", "bob"} {
		task := Task{ID: "cgt-" + acct, Kind: KindVideo, Account: acct, Status: "queued", CreatedAt: int64(100 + i),
			ExpiresAt: time.Now().Add(time.Hour).Unix()}
		if _, err := b.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	err = b.db.Update(func(txn *badger.Txn) error {
		if err := scanKeys(txn, prefixTaskCreated, func(key []byte) error { return txn.Delete(key) }); err != nil {
			return err
		}
		return txn.Delete([]byte(settingTaskCreatedIndex))
	})
	if err != nil {
		t.Fatal(err)
	}
	if page, err := b.SearchAllTasks(ctx, TaskSearch{Limit: 10}); err != nil || len(page.Tasks) != 0 {
		t.Fatalf("before reopening: %+v, %v; want nothing (the index is gone)", page.Tasks, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = OpenBadger(dir, BadgerOptions{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	page, err := b.SearchAllTasks(ctx, TaskSearch{Limit: 10})
	if err != nil || len(page.Tasks) != 2 || page.Tasks[0].ID != "cgt-bob" || page.Tasks[1].ID != "cgt-alice" {
		t.Fatalf("after reopening: %+v, %v", page.Tasks, err)
	}
}
