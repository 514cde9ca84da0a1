package storage

import (
	"encoding/hex"
	"testing"
)

// A ledgerBlockV2 block is written byte for byte as the versions before this one wrote it (the
// golden bytes are theirs), for every form of its fields: packed and unpacked hold ids (upper-case
// hex, a non-hex digit), known, unknown and empty kinds, fields repeated and changed, time going
// back, balances at their bounds.
func TestLedgerBlockV2Golden(t *testing.T) {
	const golden = "0429f08bd4b00daab4de75076b65795f61310c6770742d346f2d6d696e6900010123456789abcdef012345670001bfb802c0efd3b9070000f02e0000000000029ca5029ca502a41304ef2e0101077461736b5f390207746f702d75700480ade20480ade204000300076b65795f61310c6770742d346f2d6d696e69011f686f6c645f3031323334353637383941424344454630313233343536370101bfb8029bd2e4040000010000001e686f6c645f30313233343536373839616263646566303132333435360000009ca5029ca502a413f18bd4b00dd6f3f7c3060101077461736b5f39010123456789abcdef0123456707746f702d7570000672656261746580ade204a4eba9c6f8ffffffff0100f28bd4b00dd3f3f7c306000001000105ffffffffffffffffff01010000000000001f686f6c645f303132333435363738396162636465663031323334353667056f76657202ffffffffffffffffff0100000000000000000002ffffffffffffffffff010000"
	var b entryBlock
	for i, e := range goldenV2Entries() {
		b.add(&e, uint64(41+i))
	}
	if got := hex.EncodeToString(b.buf); got != golden {
		t.Errorf("block = %s\nwant    %s", got, golden)
	}
	// A block started again (a batch's next) writes the same bytes.
	b.n = 0
	for i, e := range goldenV2Entries() {
		b.add(&e, uint64(41+i))
	}
	if got := hex.EncodeToString(b.buf); got != golden {
		t.Errorf("block started again = %s\nwant    %s", got, golden)
	}
}

// goldenV2Entries are entries whose block covers each form of ledgerBlockV2's fields: the
// golden and odd ones of the block tests, then a hold id of the packed length with a digit
// that is not hex, a note, and fields repeated from the previous entry.
func goldenV2Entries() []LedgerEntry {
	entries := append(blockGoldenEntries(), blockOddEntries()...)
	last := entries[len(entries)-1]
	last.HoldID, last.Note, last.Kind = "hold_0123456789abcdef0123456g", "over", EntrySettle
	return append(entries, last, last)
}

// BenchmarkLedgerBlockAdd is a request's share of writing its account's block: its hold's and
// its settlement's entries, a gateway hold id.
func BenchmarkLedgerBlockAdd(b *testing.B) {
	entries := blockGoldenEntries()[:2]
	ids := [2]string{"hold_0123456789abcdef01234567", "hold_76543210fedcba9876543210"}
	var block entryBlock
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if block.n >= maxBlockEntries {
			block.n = 0
		}
		entries[0].HoldID, entries[1].HoldID = ids[i%2], ids[i%2]
		block.add(&entries[0], block.last+1)
		block.add(&entries[1], block.last+1)
	}
}
