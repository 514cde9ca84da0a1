package storage

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
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

// The ledger's keys are those fmt made before: the entry number and the hold's deadline as 20
// zero-padded digits; the lock stripe is the account's FNV-1a hash.
func TestLedgerKeysAndStripes(t *testing.T) {
	var l ledgerLocks
	for _, n := range []uint64{0, 1, 42, 1e19, math.MaxUint64} {
		if got, want := entryKey("acme", n), fmt.Sprintf("%s%s\x00%020d", prefixEntry, "acme", n); got != want {
			t.Errorf("entryKey(%d) = %q, want %q", n, got, want)
		}
	}
	for _, d := range []time.Time{{}, time.Unix(0, 0), time.Date(2026, 11, 27, 3, 0, 0, 123456789, time.UTC)} {
		h := Hold{ID: "hold_1", Deadline: d}
		if got, want := openHoldKey(h), fmt.Sprintf("%s%020d/%s", prefixOpenHold, max(d.UnixMicro(), 0), h.ID); got != want {
			t.Errorf("openHoldKey(%v) = %q, want %q", d, got, want)
		}
	}
	for _, account := range []string{"", "acme", "bench", "a much longer account name é"} {
		f := fnv.New32a()
		f.Write([]byte(account)) // a hash.Hash's Write never fails
		if got, want := l.of(account), &l.stripes[f.Sum32()%ledgerLockStripes]; got != want {
			t.Errorf("the stripe of %q differs from FNV-1a's", account)
		}
	}
}
