package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// testDirectoryPages: keys and accounts page forwards and backwards by their cursors, in byte
// order; an account's page holds its keys only, and follows a key moved to another account or
// revoked; an account exists in the pages once it has a record or a key.
func testDirectoryPages(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var all, alice []string
	for i := range 23 {
		acct := "bob"
		if i%3 == 0 {
			acct = "alice"
		}
		id := fmt.Sprintf("key_%02d", i)
		if _, err := s.CreateKey(ctx, storage.APIKey{ID: id, Hash: storage.HashSecret(id), Account: acct}); err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
		if acct == "alice" {
			alice = append(alice, id)
		}
	}
	// "ali" is a prefix of alice's name: its page must not hold her keys.
	if _, err := s.SaveAccount(ctx, storage.Account{Name: "ali", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	keyIDs := func(q storage.DirectoryPage) ([]string, bool) {
		t.Helper()
		keys, more, err := s.KeysPage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range keys {
			if q.Account != "" && k.Account != q.Account {
				t.Fatalf("the page of %s holds %s of %s", q.Account, k.ID, k.Account)
			}
			ids = append(ids, k.ID)
		}
		return ids, more
	}
	// Forwards to the end, then backwards from there to the start.
	var got []string
	q := storage.DirectoryPage{Limit: 5}
	for range 10 {
		ids, more := keyIDs(q)
		got = append(got, ids...)
		if !more {
			break
		}
		q.After = ids[len(ids)-1]
	}
	if !slices.Equal(got, all) {
		t.Fatalf("keys paged forwards: %v; want %v", got, all)
	}
	var back []string
	q = storage.DirectoryPage{Limit: 5, Before: "key_99"}
	for range 10 {
		ids, more := keyIDs(q)
		if len(ids) > 0 && !slices.IsSorted(ids) {
			t.Fatalf("a page read backwards is not in ascending order: %v", ids)
		}
		back = append(ids, back...)
		if !more {
			break
		}
		q.Before = ids[0]
	}
	if !slices.Equal(back, all) {
		t.Fatalf("keys paged backwards: %v; want %v", back, all)
	}
	if ids, more := keyIDs(storage.DirectoryPage{Limit: 3, After: "key_05", Account: "alice"}); fmt.Sprint(ids) != "[key_06 key_09 key_12]" || !more {
		t.Fatalf("alice's keys after key_05 = %v (more %v)", ids, more)
	}
	if ids, more := keyIDs(storage.DirectoryPage{Limit: 50, Account: "alice"}); !slices.Equal(ids, alice) || more {
		t.Fatalf("alice's keys = %v (more %v); want %v", ids, more, alice)
	}
	if ids, _ := keyIDs(storage.DirectoryPage{Limit: 50, Account: "ali"}); len(ids) != 0 {
		t.Fatalf("ali's keys = %v; want none", ids)
	}
	// A key moved to another account leaves the first one's page; a revoked key leaves both.
	k, err := s.KeyByID(ctx, "key_00")
	if err != nil {
		t.Fatal(err)
	}
	k.Account = "carol"
	if _, err := s.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKey(ctx, "key_03"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := keyIDs(storage.DirectoryPage{Limit: 2, Account: "alice"}); fmt.Sprint(ids) != "[key_06 key_09]" {
		t.Fatalf("alice's keys after a move and a revoke = %v", ids)
	}
	if ids, _ := keyIDs(storage.DirectoryPage{Limit: 50, Account: "carol"}); fmt.Sprint(ids) != "[key_00]" {
		t.Fatalf("carol's keys = %v", ids)
	}
	if ids, _ := keyIDs(storage.DirectoryPage{Limit: 3}); fmt.Sprint(ids) != "[key_00 key_01 key_02]" {
		t.Fatalf("the first keys after a revoke = %v", ids)
	}
	// Accounts: those with keys and the one with only a record, its record read.
	accts, more, err := s.AccountsPage(ctx, storage.DirectoryPage{Limit: 2})
	if err != nil || more != true || len(accts) != 2 || accts[0].Name != "ali" || !accts[0].Disabled || accts[1].Name != "alice" {
		t.Fatalf("first accounts = %+v (more %v), %v", accts, more, err)
	}
	accts, more, err = s.AccountsPage(ctx, storage.DirectoryPage{Limit: 2, After: "alice"})
	var names []string
	for _, a := range accts {
		names = append(names, a.Name)
	}
	if err != nil || more || strings.Join(names, " ") != "bob carol" {
		t.Fatalf("accounts after alice = %v (more %v), %v", names, more, err)
	}
	accts, more, err = s.AccountsPage(ctx, storage.DirectoryPage{Limit: 1, Before: "bob"})
	if err != nil || !more || len(accts) != 1 || accts[0].Name != "alice" {
		t.Fatalf("accounts before bob (limit 1) = %+v (more %v), %v", accts, more, err)
	}
	// The admin API finds one account this way: the page before the name and a NUL ends with it
	// (bytes compared, so "alice" is before "alice\x00" and "ali" is not "alic").
	for name, want := range map[string]string{"alice": "alice", "alic": "ali", "bob": "bob"} {
		accts, _, err = s.AccountsPage(ctx, storage.DirectoryPage{Limit: 1, Before: name + "\x00"})
		if err != nil || len(accts) != 1 || accts[0].Name != want {
			t.Fatalf("the account before %q and a NUL = %+v, %v; want %s", name, accts, err, want)
		}
	}
}
