package storage

import (
	"math"
	"testing"
)

// A batch keeps its first account's writes in itself and the others' in its map: each account's
// entries, interleaved with others' and past one block, read back from its own blocks, each
// account is visited once, and finish gives back each one's pending operations.
func TestLedgerBatchAccounts(t *testing.T) {
	batch := newBatch()
	accounts := []*bookAccount{{name: "first"}, {name: "second"}, {name: "third"}}
	want := map[*bookAccount][]LedgerEntry{}
	for _, a := range accounts {
		want[a] = blockTestEntries(a.name, 1, maxBlockEntries+3)
	}
	for i := range maxBlockEntries + 3 {
		for _, a := range accounts {
			if a.name == "third" && i > 2 {
				continue
			}
			e := &want[a][i]
			ba := batch.account(a)
			ba.addEntry(e, mustNumber(t, e.ID))
			ba.ops++
			a.pending.Add(1)
		}
	}
	want[accounts[2]] = want[accounts[2]][:3]
	if batch.firstAcct != accounts[0] || len(batch.accounts) != 2 {
		t.Fatalf("first account %v, %d others in the map; want first, 2", batch.firstAcct, len(batch.accounts))
	}
	seen := map[*bookAccount]int{}
	_ = batch.eachAccount(func(a *bookAccount, ba *batchAccount) error {
		seen[a]++
		var got []LedgerEntry
		for _, block := range ba.blocks {
			if err := decodeLedgerValue(a.name, block.last, block.buf, 0, math.MaxUint64, func(e LedgerEntry) bool {
				got = append(got, e)
				return true
			}); err != nil {
				t.Fatal(a.name, err)
			}
		}
		sameEntries(t, a.name, got, want[a])
		return nil
	})
	batch.ended = nil
	(&ledgerBook{}).finish(batch, nil)
	for _, a := range accounts {
		if seen[a] != 1 || a.pending.Load() != 0 {
			t.Errorf("%s: visited %d times, %d operations pending after finish; want 1, 0", a.name, seen[a], a.pending.Load())
		}
	}
}
