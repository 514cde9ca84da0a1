package storage

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// Requests at once on one account write their entries in shared blocks; the ledger sums, its
// pages of any size read it whole, and after a restart the holds left open are read back from
// disk (their entries from the middle of blocks), answered to a retried Hold as taken, and end.
func TestLedgerBlocksFromConcurrentRequests(t *testing.T) {
	ctx, dir := context.Background(), t.TempDir()
	b := openBook(t, dir)
	if _, err := b.Credit(ctx, Credit{Account: "acme", Amount: 1_000_000, IdempotencyKey: "c1"}, bookNow); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 16, 12 // within one page of sumsUp, with the releases
	recorded := func(w, i int) Hold {
		return Hold{ID: fmt.Sprintf("task-%d-%d", w, i), Account: "acme", KeyID: fmt.Sprint("key_", w), Model: "veo-3",
			Amount: 100, Deadline: bookNow.Add(DefaultHoldDeadline)}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprintf("req-%d-%d", w, i)
				h := Hold{ID: id, NewID: true, Transient: true, Account: "acme", KeyID: fmt.Sprint("key_", w), Model: "chat",
					Ref: id, Amount: 20, Deadline: bookNow.Add(DefaultHoldDeadline)}
				if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
					errs <- err
					return
				}
				if _, err := b.Settle(ctx, id, int64(i%30), bookNow); err != nil {
					errs <- err
					return
				}
				if _, _, err := b.Hold(ctx, recorded(w, i), bookNow); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_, all := sumsUp(t, b, "acme")
	if want := 1 + workers*rounds*3; len(all) != want {
		t.Fatalf("%d entries, want %d", len(all), want)
	}
	keys := 0
	err := b.db.View(func(txn *badger.Txn) error {
		return scanKeys(txn, prefixEntry+"acme\x00", func([]byte) error { keys++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys >= len(all) {
		t.Errorf("%d entries in %d values: no block holds more than one", len(all), keys)
	}
	t.Logf("%d entries in %d blocks", len(all), keys)
	reversed := make([]LedgerEntry, len(all))
	for i, e := range all {
		reversed[len(all)-1-i] = e
	}
	for _, limit := range []int{1, 2, 3, 7, maxBlockEntries - 1, maxBlockEntries + 1, MaxLedgerPage} {
		sameEntries(t, fmt.Sprint("forward pages of ", limit), walkPages(t, b.LedgerPage, limit), all)
		sameEntries(t, fmt.Sprint("reverse pages of ", limit), walkPages(t, b.LedgerPageNewest, limit), reversed)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openBook(t, dir)
	defer b.Close()
	byHold := make(map[string]LedgerEntry)
	for _, e := range all {
		if e.Kind == EntryHold {
			byHold[e.HoldID] = e
		}
	}
	for w := range workers {
		for i := range rounds {
			h := recorded(w, i)
			got, e, err := b.Hold(ctx, h, bookNow)
			if err != nil || got.State != HoldOpen {
				t.Fatalf("Hold(%s) again after the restart = %+v, %v", h.ID, got, err)
			}
			sameEntries(t, "the entry of "+h.ID, []LedgerEntry{e}, []LedgerEntry{byHold[h.ID]})
			if _, err := b.Release(ctx, h.ID, "test", bookNow); err != nil {
				t.Fatalf("Release(%s) = %v", h.ID, err)
			}
		}
	}
	if bal, _ := sumsUp(t, b, "acme"); bal.Held != 0 {
		t.Fatalf("balance %+v after releasing every hold; want nothing held", bal)
	}
}
