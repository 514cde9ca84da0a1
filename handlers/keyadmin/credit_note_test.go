package keyadmin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// TestCreditNoteIsText: a credit whose note is not UTF-8 (what a console form's %FF decodes to)
// is refused with 400 and credits nothing, on both stores. Before, Badger kept the bytes and
// Redis the note made text (U+FFFD), so on Redis the credit was made and answered 409 "made a
// credit before; use a new key": an operator who did so credited twice. A UTF-8 note, line
// breaks included, reads back as written and its retry answers the same entry.
func TestCreditNoteIsText(t *testing.T) {
	server := testredis.Start(t, testredis.Options{})
	redis, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: server.URL(), KeyPrefix: "credit-note", Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redis.Close() })
	badger, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { badger.Close() })
	for name, store := range map[string]storage.Store{"badger": badger, "redis": redis} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			h := &Handler{Store: store, DisabledAccounts: map[string]bool{"acme": true}}
			_, err := h.Credit(ctx, "acme", CreditRequest{Amount: "5", Note: "invoice caf\xe9", IdempotencyKey: "k1"})
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
				t.Fatalf("a note that is not UTF-8: %v; want 400", err)
			}
			if b, err := store.Balance(ctx, "acme"); err != nil || b.Amount != 0 || b.Limited {
				t.Fatalf("balance %+v, %v; want nothing credited", b, err)
			}
			_, err = h.Credit(ctx, "acme", CreditRequest{Amount: "5", Note: strings.Repeat("é", MaxNote+1), IdempotencyKey: "k1"})
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
				t.Fatalf("a note of %d characters: %v; want 400", MaxNote+1, err)
			}
			req := CreditRequest{Amount: "5", Note: "invoice café\n2026-11" + strings.Repeat("é", MaxNote-20), IdempotencyKey: "k1"}
			first, err := h.Credit(ctx, "acme", req)
			if err != nil || first.Entry.Note != req.Note || first.Balance.Balance != "5" {
				t.Fatalf("credit = %+v, %v", first, err)
			}
			again, err := h.Credit(ctx, "acme", req)
			if err != nil || again.Entry.ID != first.Entry.ID || again.Balance.Balance != "5" {
				t.Fatalf("its retry = %+v, %v; want entry %s again", again, err, first.Entry.ID)
			}
		})
	}
}
