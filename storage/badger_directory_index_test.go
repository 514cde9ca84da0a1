package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// A Badger store written before the directory's indexes existed is indexed when it is opened.
func TestBadgerDirectoryIndexBuiltOnOpen(t *testing.T) {
	dir, ctx := t.TempDir(), context.Background()
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		id := fmt.Sprint("key_", i)
		if _, err := b.CreateKey(ctx, APIKey{ID: id, Hash: HashSecret(id), Account: fmt.Sprint("acct", i%2)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.SaveAccount(ctx, Account{Name: "only-record"}); err != nil {
		t.Fatal(err)
	}
	// What an earlier version left: no index entries, no mark.
	err = b.db.Update(func(txn *badger.Txn) error {
		for _, prefix := range []string{prefixKeyOfAccount, prefixAccountName} {
			if err := scanKeys(txn, prefix, func(key []byte) error { return txn.Delete(key) }); err != nil {
				return err
			}
		}
		return txn.Delete([]byte(settingDirectoryIndex))
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys, _, err := b.KeysPage(ctx, DirectoryPage{Account: "acct1", Limit: 10}); err != nil || len(keys) != 0 {
		t.Fatalf("before reopening, acct1's keys = %+v, %v; want none (the index is gone)", keys, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = OpenBadger(dir, BadgerOptions{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	keys, more, err := b.KeysPage(ctx, DirectoryPage{Account: "acct1", Limit: 10})
	if err != nil || more || len(keys) != 2 || keys[0].ID != "key_1" || keys[1].ID != "key_3" {
		t.Fatalf("acct1's keys = %+v (more %v), %v", keys, more, err)
	}
	accts, _, err := b.AccountsPage(ctx, DirectoryPage{Limit: 10})
	if err != nil || len(accts) != 3 || accts[0].Name+" "+accts[1].Name+" "+accts[2].Name != "acct0 acct1 only-record" {
		t.Fatalf("accounts = %+v, %v", accts, err)
	}
}
