package storetest

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

func testKeys(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v0, err := s.DirectoryVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	quota := int64(50)
	key := storage.APIKey{
		ID: "key_b", Hash: storage.HashSecret("b"), Account: "x", Models: []string{"gpt-*"},
		AllowIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, ExpiresAt: time.Unix(2_000_000_000, 0).UTC(),
		Limits: storage.Limits{Quota: &quota, RateRequests: 10, RateWindow: time.Minute},
	}
	created, err := s.CreateKey(ctx, key)
	if err != nil || created.Version != 1 {
		t.Fatalf("CreateKey = %+v, %v", created, err)
	}
	if _, err := s.CreateKey(ctx, storage.APIKey{ID: "key_b", Hash: storage.HashSecret("other"), Account: "y"}); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("duplicate id = %v, want ErrExists", err)
	}
	if _, err := s.CreateKey(ctx, storage.APIKey{ID: "key_c", Hash: storage.HashSecret("b"), Account: "y"}); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("duplicate secret = %v, want ErrExists", err)
	}
	if _, err := s.CreateKey(ctx, storage.APIKey{ID: "key_a", Hash: storage.HashSecret("a"), Account: "y"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.KeyByID(ctx, "key_b")
	if err != nil || got.Hash != key.Hash || *got.Quota != 50 || got.RateWindow != time.Minute || got.AllowIPs[0] != key.AllowIPs[0] || !got.ExpiresAt.Equal(key.ExpiresAt) {
		t.Fatalf("KeyByID = %+v, %v", got, err)
	}
	list, err := s.ListKeys(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "key_a" || list[1].ID != "key_b" {
		t.Fatalf("ListKeys = %+v, %v", list, err)
	}
	// Two administrators edit one key: the second, from the old version, is refused.
	a, b := got, got
	a.Models = []string{"dall-e-*"}
	if _, err := s.UpdateKey(ctx, a); err != nil {
		t.Fatal(err)
	}
	b.Disabled = true
	if _, err := s.UpdateKey(ctx, b); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("update from a stale version = %v, want ErrConflict", err)
	}
	if _, err := s.UpdateKey(ctx, storage.APIKey{ID: "nope", Hash: storage.HashSecret("nope")}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update of a missing key = %v", err)
	}
	if v1, err := s.DirectoryVersion(ctx); err != nil || v1 <= v0 {
		t.Fatalf("DirectoryVersion %d -> %d, %v: want it raised by writes", v0, v1, err)
	}
	if err := s.DeleteKey(ctx, "key_b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeyByHash(ctx, key.Hash); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted key still found by hash: %v", err)
	}
	if err := s.DeleteKey(ctx, "key_b"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second delete = %v", err)
	}
}

// testKeyRevokeSeenAtOnce: after the lookups have been served (and cached), a revoke through
// the same store is seen by the very next lookup.
func testKeyRevokeSeenAtOnce(t *testing.T, s storage.Store) {
	ctx := context.Background()
	k, err := s.CreateKey(ctx, storage.APIKey{ID: "key_r", Hash: storage.HashSecret("r"), Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got, err := s.KeyByHash(ctx, k.Hash); err != nil || got.Disabled {
			t.Fatalf("lookup = %+v, %v", got, err)
		}
		if _, err := s.Account(ctx, "acme"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("account without a record = %v", err)
		}
	}
	k.Disabled = true
	if _, err := s.UpdateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveAccount(ctx, storage.Account{Name: "acme", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.KeyByHash(ctx, k.Hash); err != nil || !got.Disabled {
		t.Fatalf("lookup after revoke = %+v, %v; want disabled", got, err)
	}
	if got, err := s.Account(ctx, "acme"); err != nil || !got.Disabled {
		t.Fatalf("account after disable = %+v, %v", got, err)
	}
}

func testAccounts(t *testing.T, s storage.Store) {
	ctx := context.Background()
	z, err := s.SaveAccount(ctx, storage.Account{Name: "z", Disabled: true})
	if err != nil || z.Version != 1 {
		t.Fatalf("SaveAccount = %+v, %v", z, err)
	}
	if _, err := s.SaveAccount(ctx, storage.Account{Name: "z"}); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("create over an existing account = %v, want ErrConflict", err)
	}
	if _, err := s.SaveAccount(ctx, storage.Account{Name: "m"}); err != nil {
		t.Fatal(err)
	}
	z.Disabled = false
	if z, err = s.SaveAccount(ctx, z); err != nil || z.Version != 2 {
		t.Fatalf("update = %+v, %v", z, err)
	}
	accts, err := s.ListAccounts(ctx)
	if err != nil || len(accts) != 2 || accts[0].Name != "m" || accts[1].Name != "z" || accts[1].Disabled {
		t.Fatalf("ListAccounts = %+v, %v", accts, err)
	}
}
