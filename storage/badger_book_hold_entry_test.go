package storage

import (
	"context"
	"testing"
	"time"
)

// The book keeps no copy of a hold's entry for a hold it took (bookHold.entry makes it from the
// hold's record): a repeat of Hold answers the entry as the ledger has it, with the Ref the hold
// was taken with after a binding put the task's id in the hold's, recorded or not when bound,
// in memory and read again from Badger.
func TestBadgerHoldAnswersItsEntryAgain(t *testing.T) {
	for _, transient := range []bool{false, true} {
		t.Run(map[bool]string{false: "recorded", true: "transient"}[transient], func(t *testing.T) {
			ctx, dir := context.Background(), t.TempDir()
			b := openBook(t, dir)
			defer func() { b.Close() }()
			if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 10_000_000, IdempotencyKey: "c"}, bookNow); err != nil {
				t.Fatal(err)
			}
			h := Hold{ID: "hold_00000000000000000000000a", Account: "acme", KeyID: "key_1", Model: "m", Ref: "req-1",
				Amount: 1_000_000, Deadline: bookNow.Add(time.Hour), Transient: transient}
			_, first, err := b.Hold(ctx, h, bookNow)
			if err != nil {
				t.Fatal(err)
			}
			want := LedgerEntry{Time: bookNow, KeyID: "key_1", Model: "m", Ref: "req-1", HoldID: h.ID, Kind: EntryHold, Amount: -1_000_000}
			if !transient {
				want.ID, want.Account, want.BalanceAfter = "2", "acme", 9_000_000
			}
			if !sameLedgerEntry(first, want) {
				t.Fatalf("Hold's entry = %+v, want %+v", first, want)
			}
			if _, again, err := b.Hold(ctx, h, bookNow); err != nil || !sameLedgerEntry(again, want) {
				t.Fatalf("Hold again = %+v, %v; want %+v", again, err, want)
			}
			// Bound, the hold is recorded (a transient one now, with the next number).
			want.ID, want.Account, want.BalanceAfter = "2", "acme", 9_000_000
			// While the binding's batch commits, the book has the bound hold in memory (it
			// drops it once committed): what Hold decides then is answered from there.
			var during LedgerEntry
			var duringErr error
			b.ledger.queue.failCommit = func() error {
				a, err := b.ledger.lockAccount(b.db, "acme")
				if err != nil {
					duringErr = err
					return nil
				}
				_, during, _, _, duringErr = b.decideHold(a, h, bookNow, false)
				a.mu.Unlock()
				return nil
			}
			if err := b.BindHold(ctx, h.ID, "task-1"); err != nil {
				t.Fatal(err)
			}
			b.ledger.queue.failCommit = nil
			if duringErr != nil || !sameLedgerEntry(during, want) {
				t.Fatalf("Hold of the hold being bound = %+v, %v; want %+v", during, duringErr, want)
			}
			page, _, err := b.LedgerPage(ctx, "acme", "1", 10)
			if err != nil || len(page) != 1 || !sameLedgerEntry(page[0], want) {
				t.Fatalf("the ledger's hold entry = %+v, %v; want %+v", page, err, want)
			}
			for _, where := range []string{"in memory", "read from Badger"} {
				held, again, err := b.Hold(ctx, h, bookNow)
				if err != nil || held.Ref != "task-1" || !held.Bound || !sameLedgerEntry(again, want) {
					t.Fatalf("%s: Hold of the bound hold = %+v, %+v, %v; want Ref task-1 and the entry %+v", where, held, again, err, want)
				}
				b.Close()
				b = openBook(t, dir)
			}
		})
	}
}

// sameLedgerEntry is a == b, with times compared by Equal.
func sameLedgerEntry(a, b LedgerEntry) bool {
	same := a.Time.Equal(b.Time)
	a.Time, b.Time = time.Time{}, time.Time{}
	return same && a == b
}
