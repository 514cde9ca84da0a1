package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// A Redis store written before the directory's indexes existed (keys and accounts in plain
// sets only) pages every key and account: the first page builds the indexes once.
func TestRedisDirectoryIndexBuiltFromEarlierSets(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	ctx := context.Background()
	s := openRedis(t, redisLocation(srv.URL(), "dix"))
	defer s.Close()
	for i := range 5 {
		id := fmt.Sprint("key_", i)
		if _, err := s.CreateKey(ctx, storage.APIKey{ID: id, Hash: storage.HashSecret(id), Account: fmt.Sprint("acct", i%2)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SaveAccount(ctx, storage.Account{Name: "only-record"}); err != nil {
		t.Fatal(err)
	}
	// What an earlier version left: no sorted-set indexes, no mark.
	for _, k := range []string{"dix", "kz", "kn:acct0", "kn:acct1", "an"} {
		if err := srv.Do("DEL", "{dix}:"+k).Error(); err != nil {
			t.Fatal(err)
		}
	}
	keys, more, err := s.KeysPage(ctx, storage.DirectoryPage{Account: "acct1", Limit: 10})
	if err != nil || more || len(keys) != 2 || keys[0].ID != "key_1" || keys[1].ID != "key_3" {
		t.Fatalf("acct1's keys = %+v (more %v), %v", keys, more, err)
	}
	accts, _, err := s.AccountsPage(ctx, storage.DirectoryPage{Limit: 10})
	if err != nil || len(accts) != 3 || accts[0].Name+" "+accts[1].Name+" "+accts[2].Name != "acct0 acct1 only-record" {
		t.Fatalf("accounts = %+v, %v", accts, err)
	}
	if n, err := srv.Do("ZCARD", "{dix}:kz").AsInt64(); err != nil || n != 5 {
		t.Fatalf("the key index holds %d ids, %v", n, err)
	}
}
