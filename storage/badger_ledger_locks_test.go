package storage

import (
	"context"
	"testing"
	"time"
)

// A hold's account is noted when it is taken and dropped when it ends, however it ends; a
// hold without a note (taken before a restart) still ends, its account read from its record.
func TestHoldAccountNotes(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBadger(dir, BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, now := context.Background(), time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 100, IdempotencyKey: "c"}, now); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"settled", "released", "bound", "noteless"} {
		if _, _, err := b.Hold(ctx, Hold{ID: id, Account: "acme", KeyID: "k", Amount: 10, Deadline: now.Add(time.Hour)}, now); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.ledger.hints.Load(); got != 4 {
		t.Fatalf("%d notes after 4 holds", got)
	}
	if account, err := b.holdAccount(ctx, "settled"); err != nil || account != "acme" {
		t.Fatalf("holdAccount: %q %v", account, err)
	}
	b.ledger.forget("noteless") // as after a restart
	if _, err := b.Settle(ctx, "settled", 4, now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Release(ctx, "released", "test", now); err != nil {
		t.Fatal(err)
	}
	if err := b.BindHold(ctx, "bound", "task-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Settle(ctx, "bound", 10, now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Settle(ctx, "noteless", 1, now); err != nil {
		t.Fatal(err)
	}
	if got := b.ledger.hints.Load(); got != 0 {
		t.Errorf("%d notes left after every hold ended", got)
	}
	bal, err := b.Balance(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(100 - 4 - 10 - 1); bal.Amount != want || bal.Held != 0 {
		t.Errorf("balance %+v, want %d and nothing held", bal, want)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
