package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A list without a total reads only its page: from the start or from the cursor's own entry up to
// the page's last task. One record in the middle of the account's 300 is unreadable, so any read
// that reaches it fails; pages on either side of it succeed, and a list with a total (which
// reads every task behind its start) does reach it.
func TestBadgerTaskListReadsOnlyThePage(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	expires := time.Now().Add(time.Hour).Unix()
	for i := range 300 {
		task := Task{ID: fmt.Sprintf("cgt-%03d", i), Kind: KindVideo, Account: "acme", Status: "queued",
			CreatedAt: int64(1000 + i), ExpiresAt: expires}
		if _, err := b.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.db.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte(prefixTask+"cgt-150"), []byte("{not a task"))
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []TaskQuery{
		{PageSize: 21},
		{PageSize: 21, Oldest: true},
		{PageSize: 21, After: "cgt-140"},
		{PageSize: 21, After: "cgt-160", Oldest: true},
		{PageNum: 3, PageSize: 21, After: "cgt-220"},
	} {
		q.Kind, q.NoTotal = KindVideo, true
		page, err := b.ListTasks(ctx, "acme", q)
		if err != nil || len(page.Tasks) != 21 {
			t.Fatalf("%+v: %d tasks, %v; want a page of 21 that never reads cgt-150", q, len(page.Tasks), err)
		}
	}
	if _, err := b.ListTasks(ctx, "acme", TaskQuery{Kind: KindVideo, PageSize: 21, After: "cgt-200"}); err == nil {
		t.Fatal("a list with a total did not read the unreadable cgt-150 behind its page")
	}
}
