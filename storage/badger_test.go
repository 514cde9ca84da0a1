package storage

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func openTemp(t *testing.T, dir string) *Badger {
	t.Helper()
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKeysAndAccountsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := openTemp(t, dir)
	key := APIKey{
		ID: "key_1", Hash: HashSecret("mg-secret"), Account: "acme",
		Models:    []string{"gpt-*"},
		AllowIPs:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		ExpiresAt: time.Unix(2000000000, 0).UTC(),
	}
	if err := b.PutKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := b.PutAccount(ctx, Account{Name: "acme", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openTemp(t, dir)
	defer b.Close()
	got, err := b.KeyByHash(ctx, HashSecret("mg-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != key.ID || got.Account != "acme" || got.AllowIPs[0] != key.AllowIPs[0] || !got.ExpiresAt.Equal(key.ExpiresAt) {
		t.Fatalf("key after reopen = %+v, want %+v", got, key)
	}
	if _, err := b.KeyByHash(ctx, HashSecret("other")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown key: err = %v, want ErrNotFound", err)
	}
	acct, err := b.Account(ctx, "acme")
	if err != nil || !acct.Disabled {
		t.Fatalf("account = %+v, %v; want disabled", acct, err)
	}
	if _, err := b.Account(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown account: err = %v", err)
	}
}

func TestHashSecretNeverStoresTheSecret(t *testing.T) {
	h := HashSecret("mg-secret")
	if len(h) != 64 || h == "mg-secret" {
		t.Fatalf("hash = %q", h)
	}
}

func TestTaskListFiltersPagesAndIsolatesAccounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := openTemp(t, dir)
	base := time.Now().Unix()
	for i := range 7 {
		acct, status := "a", "queued"
		if i%3 == 0 {
			acct = "b"
		}
		if i%2 == 0 {
			status = "succeeded"
		}
		task := Task{ID: fmt.Sprintf("cgt-%d", i), Kind: KindVideo, Account: acct, Model: "m1", Status: status, CreatedAt: base + int64(i)}
		if err := b.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	// Account a owns tasks 1, 2, 4, 5; newest first.
	page, err := b.ListTasks(ctx, "a", TaskQuery{PageNum: 1, PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 4 || ids(page) != "cgt-5 cgt-4 cgt-2" {
		t.Fatalf("page 1 = %d %q", page.Total, ids(page))
	}
	page, _ = b.ListTasks(ctx, "a", TaskQuery{PageNum: 2, PageSize: 3})
	if page.Total != 4 || ids(page) != "cgt-1" {
		t.Fatalf("page 2 = %d %q", page.Total, ids(page))
	}
	page, _ = b.ListTasks(ctx, "a", TaskQuery{PageSize: 10, Status: "succeeded"})
	if ids(page) != "cgt-4 cgt-2" {
		t.Fatalf("status filter = %q", ids(page))
	}
	page, _ = b.ListTasks(ctx, "a", TaskQuery{PageSize: 10, IDs: []string{"cgt-1", "cgt-0"}})
	if ids(page) != "cgt-1" {
		t.Fatalf("id filter crossed accounts: %q", ids(page))
	}
	page, _ = b.ListTasks(ctx, "a", TaskQuery{PageSize: 10, Kind: KindImage})
	if page.Total != 0 {
		t.Fatalf("kind filter = %q", ids(page))
	}

	// Update and delete keep the index consistent, and both survive a reopen.
	task, _ := b.Task(ctx, "cgt-5")
	task.Status = "failed"
	if err := b.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteTask(ctx, "cgt-4"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteTask(ctx, "missing"); err != nil {
		t.Fatalf("deleting a missing task: %v", err)
	}
	b.Close()
	b = openTemp(t, dir)
	defer b.Close()
	page, _ = b.ListTasks(ctx, "a", TaskQuery{PageSize: 10})
	if page.Total != 3 || ids(page) != "cgt-5 cgt-2 cgt-1" {
		t.Fatalf("after update/delete = %d %q", page.Total, ids(page))
	}
	if got, _ := b.Task(ctx, "cgt-5"); got.Status != "failed" {
		t.Fatalf("status after reopen = %q", got.Status)
	}
	if _, err := b.Task(ctx, "cgt-4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted task: %v", err)
	}
}

func TestTaskRecordsExpireAfterRetention(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	created := time.Now().Add(-30 * time.Minute)
	task := Task{ID: "t1", Account: "a", CreatedAt: created.Unix(), ExpiresAt: created.Add(time.Hour).Unix()}
	if err := b.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	err = b.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(prefixTask + "t1"))
		if err != nil {
			return err
		}
		// The record lives until its ExpiresAt: about 30 minutes remain.
		left := time.Until(time.Unix(int64(item.ExpiresAt()), 0))
		if left < 29*time.Minute || left > 31*time.Minute {
			t.Errorf("task expires in %v, want about 30m", left)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ids(p TaskPage) string {
	s := ""
	for i, t := range p.Tasks {
		if i > 0 {
			s += " "
		}
		s += t.ID
	}
	return s
}

func TestUnfinishedTasksFollowTheStatus(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := openTemp(t, dir)
	now := time.Now().Unix()
	for _, task := range []Task{
		{ID: "q", Kind: KindVideo, Account: "a", Status: "queued", CreatedAt: now},
		{ID: "r", Kind: KindVideo, Account: "a", Status: "running", CreatedAt: now},
		{ID: "s", Kind: KindVideo, Account: "a", Status: "succeeded", CreatedAt: now},
		{ID: "i", Kind: KindImage, Account: "a", Status: "queued", CreatedAt: now},
	} {
		if err := b.PutTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	done, _ := b.Task(ctx, "r")
	done.Status = "failed"
	b.PutTask(ctx, done)
	b.DeleteTask(ctx, "q")
	b.PutTask(ctx, Task{ID: "n", Kind: KindVideo, Account: "a", Status: "queued", CreatedAt: now})
	b.Close()
	b = openTemp(t, dir)
	defer b.Close()
	var open []string
	if err := b.UnfinishedTasks(ctx, func(id string) bool { open = append(open, id); return true }); err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0] != "n" {
		t.Fatalf("unfinished = %v, want [n]", open)
	}
}
