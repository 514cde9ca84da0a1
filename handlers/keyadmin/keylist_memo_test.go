package keyadmin

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// countingStore counts the key listings that reach the store.
type countingStore struct {
	storage.Store
	lists atomic.Int64
}

func (s *countingStore) ListKeys(ctx context.Context) ([]storage.APIKey, error) {
	s.lists.Add(1)
	return s.Store.ListKeys(ctx)
}

// TestKeyListMemo: in a memo's context, listing keys, listing accounts and looking up an
// account without a record of its own read the key list from the store once; without it, each
// does.
func TestKeyListMemo(t *testing.T) {
	badger, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer badger.Close()
	store := &countingStore{Store: badger}
	h := &Handler{Store: store}
	if _, err := h.CreateKey(context.Background(), []byte(`{"account":"acme"}`)); err != nil {
		t.Fatal(err)
	}
	page := func(ctx context.Context) int64 {
		before := store.lists.Load()
		if keys, err := h.Keys(ctx); err != nil || len(keys) != 1 {
			t.Fatalf("keys = %v, %v", keys, err)
		}
		if _, err := h.Accounts(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Account(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		return store.lists.Load() - before
	}
	if n := page(WithKeyListMemo(context.Background())); n != 1 {
		t.Fatalf("with the memo the store listed keys %d times; want 1", n)
	}
	if n := page(context.Background()); n != 3 {
		t.Fatalf("without the memo the store listed keys %d times; want 3", n)
	}
}
