package storage

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// A ledger begun by an older store (one entry per value) and continued in blocks by concurrent
// holds, across a restart: the entries are numbered on from the old ones, each balance after is
// the running sum, Balance agrees, a hold taken before the restart ends after it, and a page
// read from a cursor handed out before the restart, either way, is the ledger's slice after it.
func TestLedgerPagesAcrossARestartFromAnOlderStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := openBook(t, dir)
	err := b.db.Update(func(txn *badger.Txn) error {
		for n := uint64(1); n <= 3; n++ {
			e := LedgerEntry{ID: strconv.FormatUint(n, 10), Time: bookNow, Account: "acme", Kind: EntryCredit,
				Amount: 1000, BalanceAfter: int64(n) * 1000}
			if err := txn.Set([]byte(entryKey("acme", n)), encodeEntry(e, n)); err != nil {
				return err
			}
		}
		return txn.Set([]byte(balanceKey("acme")), balanceRecord{Amount: 3000, Limited: true, Entries: 3}.encode())
	})
	if err != nil {
		t.Fatal(err)
	}
	traffic := func(b *Badger, round int) {
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Go(func() {
				for i := range 10 {
					id := fmt.Sprintf("r%d-%d-%d", round, g, i)
					h := Hold{ID: id, NewID: true, Transient: i%2 == 0, Account: "acme", Amount: 7, Deadline: bookNow.Add(time.Hour)}
					if _, _, err := b.Hold(ctx, h, bookNow); err != nil {
						t.Error(err)
						return
					}
					if _, err := b.Settle(ctx, id, int64(i%5), bookNow); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	traffic(b, 0)
	if _, _, err := b.Hold(ctx, Hold{ID: "open", Account: "acme", Amount: 50, Deadline: bookNow.Add(time.Hour)}, bookNow); err != nil {
		t.Fatal(err)
	}
	var cursors []string
	for after := ""; ; {
		cursors = append(cursors, after)
		_, next, err := b.LedgerPage(ctx, "acme", after, 7)
		if err != nil {
			t.Fatal(err)
		}
		if after = next; next == "" {
			break
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openBook(t, dir)
	defer b.Close()
	if _, err := b.Settle(ctx, "open", 20, bookNow); err != nil {
		t.Fatalf("settling after the restart a hold taken before it: %v", err)
	}
	traffic(b, 1)
	if t.Failed() {
		return
	}
	bal, all := sumsUp(t, b, "acme")
	if want := 3 + 2*(2*60) + 2; len(all) != want || bal.Held != 0 {
		t.Fatalf("%d entries, balance %+v; want %d, nothing held", len(all), bal, want)
	}
	for _, after := range cursors {
		from := 0
		if after != "" {
			from = int(mustNumber(t, after))
		}
		got, _, err := b.LedgerPage(ctx, "acme", after, 9)
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, "the page after "+after, got, all[from:min(from+9, len(all))])
		if after == "" {
			continue
		}
		got, _, err = b.LedgerPageNewest(ctx, "acme", after, 9)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]LedgerEntry, 0, 9)
		for i := from - 2; i >= 0 && len(want) < 9; i-- {
			want = append(want, all[i])
		}
		sameEntries(t, "the page before "+after, got, want)
	}
}
