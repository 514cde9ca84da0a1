package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// testLedgerHoldRace: many goroutines hold against a balance that fits exactly fit holds;
// exactly fit succeed, the others get ErrInsufficient, and the ledger sums to the balance.
func testLedgerHoldRace(t *testing.T, s storage.Store) {
	const fit, racers = 25, 100
	mustCredit(t, s, "acme", fit*3*unit, "c")
	won := winners(t, racers, func(i int) (bool, error) {
		_, _, err := s.Hold(context.Background(), storage.Hold{ID: fmt.Sprint("r", i), Account: "acme", Amount: 3 * unit, Deadline: ledgerNow.Add(time.Hour)}, ledgerNow)
		if errors.Is(err, storage.ErrInsufficient) {
			return false, nil
		}
		return err == nil, err
	})
	if won != fit {
		t.Fatalf("%d holds succeeded; want %d", won, fit)
	}
	checkLedger(t, s, "acme", 0, fit*3*unit)
}

// testLedgerBudgetRace: many goroutines hold against a key budget that fits exactly fit holds
// (on an unlimited account).
func testLedgerBudgetRace(t *testing.T, s storage.Store) {
	const fit, racers = 10, 50
	won := winners(t, racers, func(i int) (bool, error) {
		_, _, err := s.Hold(context.Background(), storage.Hold{ID: fmt.Sprint("b", i), Account: "acme", KeyID: "k", Amount: 2 * unit,
			Budget: storage.Budget{Limit: fit * 2 * unit, Period: storage.BudgetDay}, Deadline: ledgerNow}, ledgerNow)
		if errors.Is(err, storage.ErrBudgetExceeded) {
			return false, nil
		}
		return err == nil, err
	})
	if won != fit {
		t.Fatalf("%d holds succeeded; want %d", won, fit)
	}
	checkLedger(t, s, "acme", -fit*2*unit, fit*2*unit)
}

// testLedgerEndRace: Settle and Release race on each hold (two of each); exactly one ends it,
// and the ledger holds exactly one ending per hold.
func testLedgerEndRace(t *testing.T, s storage.Store) {
	const holds = 20
	mustCredit(t, s, "acme", holds*5*unit, "c")
	for i := range holds {
		mustHold(t, s, storage.Hold{ID: fmt.Sprint("e", i), Account: "acme", Amount: 5 * unit})
	}
	var settled int
	for i := range holds {
		id := fmt.Sprint("e", i)
		won := winners(t, 4, func(j int) (bool, error) {
			var err error
			if j%2 == 0 {
				_, err = s.Settle(context.Background(), id, 2*unit, ledgerNow)
			} else {
				_, err = s.Release(context.Background(), id, "cancelled", ledgerNow)
			}
			if errors.Is(err, storage.ErrHoldEnded) {
				return false, nil
			}
			return err == nil, err
		})
		if won != 1 {
			t.Fatalf("hold %s ended %d times; want once", id, won)
		}
		h, err := s.HoldByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if h.State == storage.HoldSettled {
			settled++
		}
	}
	entries := checkLedger(t, s, "acme", holds*5*unit-int64(settled)*2*unit, 0)
	if len(entries) != 1+2*holds {
		t.Fatalf("%d entries; want %d (a credit, and a hold and one ending per hold)", len(entries), 1+2*holds)
	}
}

// testLedgerCreditRace: the same credit sent at once by many goroutines is made once.
func testLedgerCreditRace(t *testing.T, s storage.Store) {
	ids := make(chan string, 20)
	winners(t, 20, func(int) (bool, error) {
		e, err := s.Credit(context.Background(), storage.Credit{Account: "acme", Amount: 7 * unit, IdempotencyKey: "once"}, ledgerNow)
		ids <- e.ID
		return err == nil, err
	})
	close(ids)
	for id := range ids {
		if id != "1" {
			t.Fatalf("a racing credit answered entry %q; want the one entry 1", id)
		}
	}
	checkLedger(t, s, "acme", 7*unit, 0)
}

// testLedgerCreditNote: a credit's note reads back as it was written (line breaks and all), and
// one that is not UTF-8 is refused with nothing credited: a store that keeps text (Redis's JSON)
// and one that keeps bytes (Badger) would otherwise answer the same credit differently.
func testLedgerCreditNote(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.Credit(ctx, storage.Credit{Account: "acme", Amount: unit, IdempotencyKey: "bad", Note: "caf\xe9"}, ledgerNow); err == nil {
		t.Fatal("a note that is not UTF-8 was credited")
	}
	note := "café =1+1\nsecond line\x00"
	e, err := s.Credit(ctx, storage.Credit{Account: "acme", Amount: unit, IdempotencyKey: "good", Note: note}, ledgerNow)
	if err != nil || e.Note != note {
		t.Fatalf("credit = %+v, %v; want the note %q", e, err, note)
	}
	if entries := checkLedger(t, s, "acme", unit, 0); len(entries) != 1 || entries[0].Note != note {
		t.Fatalf("ledger %+v; want the one credit with its note", entries)
	}
}
