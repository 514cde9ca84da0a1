package storage

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// blockTestEntries are n entries of account, numbered from first, whose fields change from one
// entry to the next now and then (as those of one batch do), with times before and after 1970.
func blockTestEntries(account string, first uint64, n int) []LedgerEntry {
	entries := make([]LedgerEntry, n)
	for i := range entries {
		num := first + uint64(i)
		entries[i] = LedgerEntry{ID: strconv.FormatUint(num, 10), Account: account,
			Time:  time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC).Add(time.Duration(int64(num)*int64(num%7)) * 333 * time.Millisecond),
			KeyID: fmt.Sprint("key_", num/5), Model: []string{"chat", "veo-3", ""}[num%3], Ref: fmt.Sprint("req_", num/2),
			HoldID: fmt.Sprint("hold_", num/2), Kind: []string{EntryHold, EntrySettle}[num%2], Amount: int64(num%4) - 2,
			BalanceAfter: -int64(num) * 1000, Charged: int64(num % 3), Note: []string{"", "", "über"}[num%3]}
		if num%11 == 0 {
			entries[i].Time = time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
		}
	}
	return entries
}

// writeBlock encodes entries (consecutive) as one block and returns its key and value.
func writeBlock(entries []LedgerEntry) (string, []byte) {
	var b entryBlock
	for i := range entries {
		n, _ := strconv.ParseUint(entries[i].ID, 10, 64)
		b.add(&entries[i], n)
	}
	return entryKey(entries[0].Account, b.last), b.buf
}

// sameEntries fails t unless got and want are the same entries in the same order.
func sameEntries(t *testing.T, what string, got, want []LedgerEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) {
			t.Fatalf("%s: entry %d's time %s, want %s", what, i, got[i].Time, want[i].Time)
		}
		g := got[i]
		g.Time = want[i].Time
		if g != want[i] {
			t.Fatalf("%s: entry %d = %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

// The ledger reads one account's entries written as old one-entry values (JSON, then binary)
// and as blocks of every size side by side: pages of every size forward and in reverse, from
// every cursor (mostly in the middle of a block), and each entry alone, without skipping,
// repeating or mixing in the neighbouring accounts' entries.
func TestLedgerBlocksReadAcrossBlocksAndOldValues(t *testing.T) {
	ctx := context.Background()
	b := openBook(t, t.TempDir())
	defer b.Close()
	want := blockTestEntries("acme", 1, 100)
	err := b.db.Update(func(txn *badger.Txn) error {
		for _, e := range want[:3] { // as the JSON versions wrote them
			raw, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := txn.Set([]byte(entryKey("acme", mustNumber(t, e.ID))), raw); err != nil {
				return err
			}
		}
		for _, e := range want[3:6] { // as the binary version before blocks wrote them
			if err := txn.Set([]byte(entryKey("acme", mustNumber(t, e.ID))), encodeEntry(e, mustNumber(t, e.ID))); err != nil {
				return err
			}
		}
		at := 6
		for _, size := range []int{1, 5, maxBlockEntries, 2, 17, 5} {
			key, val := writeBlock(want[at : at+size])
			if err := txn.Set([]byte(key), val); err != nil {
				return err
			}
			at += size
		}
		if at != len(want) {
			t.Fatalf("the blocks hold %d entries, want %d", at, len(want))
		}
		// Neighbours whose keys sort right before and after acme's.
		for _, account := range []string{"acm", "acme2", "acme\x01"} {
			key, val := writeBlock(blockTestEntries(account, 1, 9))
			if err := txn.Set([]byte(key), val); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reversed := make([]LedgerEntry, len(want))
	for i, e := range want {
		reversed[len(want)-1-i] = e
	}
	for limit := 1; limit <= len(want)+1; limit++ {
		sameEntries(t, fmt.Sprint("forward pages of ", limit), walkPages(t, b.LedgerPage, limit), want)
		sameEntries(t, fmt.Sprint("reverse pages of ", limit), walkPages(t, b.LedgerPageNewest, limit), reversed)
	}
	for c := 0; c <= len(want); c++ {
		after := ""
		if c > 0 {
			after = strconv.Itoa(c)
		}
		got, _, err := b.LedgerPage(ctx, "acme", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, fmt.Sprint("the page after ", c), got, want[c:min(c+3, len(want))])
	}
	for c := 1; c <= len(want)+1; c++ {
		got, _, err := b.LedgerPageNewest(ctx, "acme", strconv.Itoa(c), 3)
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, fmt.Sprint("the page before ", c), got, reversed[len(want)+1-c:min(len(want)+4-c, len(want))])
	}
	err = b.db.View(func(txn *badger.Txn) error {
		for n := uint64(0); n <= uint64(len(want))+1; n++ {
			var e LedgerEntry
			err := txnEntry(txn, "acme", n, &e)
			switch {
			case n == 0 || n > uint64(len(want)):
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("entry %d: %+v, %v; want ErrNotFound", n, e, err)
				}
			case err != nil:
				return err
			default:
				sameEntries(t, fmt.Sprint("entry ", n), []LedgerEntry{e}, want[n-1:n])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustNumber(t *testing.T, id string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// walkPages reads acme's whole ledger in pages of limit entries, checking each page's cursor.
func walkPages(t *testing.T, page func(context.Context, string, string, int) ([]LedgerEntry, string, error), limit int) []LedgerEntry {
	t.Helper()
	var all []LedgerEntry
	cursor := ""
	for range 1000 {
		got, next, err := page(context.Background(), "acme", cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > limit || (next != "" && (len(got) != limit || next != got[len(got)-1].ID)) {
			t.Fatalf("a page of %d entries (limit %d) with next %q", len(got), limit, next)
		}
		all = append(all, got...)
		if next == "" {
			return all
		}
		cursor = next
	}
	t.Fatal("the pages never end")
	return nil
}

// A block whose bytes or key do not agree is an error, never a panic nor a wrong entry.
func TestLedgerBlockCorruption(t *testing.T) {
	entries := blockTestEntries("acme", 5, 4)
	key, val := writeBlock(entries)
	keyN, err := entryKeyNumber([]byte(key))
	if err != nil || keyN != 8 {
		t.Fatalf("the block's key number = %d, %v; want 8", keyN, err)
	}
	all := func(val []byte, keyN uint64) error {
		return decodeLedgerValue("acme", keyN, val, 0, math.MaxUint64, func(LedgerEntry) bool { return true })
	}
	if err := all(val, 8); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"keyed before its last entry":         all(val, 7),
		"keyed after its last entry":          all(val, 9),
		"cut short":                           all(val[:len(val)-1], 8),
		"with a byte more":                    all(append(append([]byte{}, val...), 0), 8),
		"without entries":                     all(val[:2], 8),
		"a one-entry value of another number": all(encodeEntry(entries[0], 5), 6),
	} {
		if err == nil {
			t.Errorf("a block %s was read", name)
		}
	}
}

// FuzzLedgerBlock: entries made of any fields read back from their block as written, and any
// bytes read as a block are entries or an error.
func FuzzLedgerBlock(f *testing.F) {
	f.Add("key_1", "chat", "hold_1", "", int64(-20_000), int64(1_795_000_000), uint32(5), uint8(3), uint64(1))
	f.Add("", "", "", "note", int64(math.MinInt64), int64(-1), uint32(999_999_999), uint8(64), uint64(math.MaxUint64-70))
	f.Fuzz(func(t *testing.T, keyID, model, holdID, note string, amount, sec int64, nsec uint32, count uint8, first uint64) {
		// Any bytes: entries or an error, never a panic (which fails the fuzz).
		for _, version := range []byte{ledgerBlockV1, ledgerBlockV2} {
			raw := append([]byte{version}, keyID+model+holdID+note...)
			if err := decodeLedgerValue("a", 0, raw, 0, math.MaxUint64, func(LedgerEntry) bool { return true }); err == nil {
				t.Logf("%q reads as a block", raw)
			}
		}
		n := int(count%maxBlockEntries) + 1
		first = min(first, math.MaxUint64-uint64(n))
		want := make([]LedgerEntry, n)
		for i := range want {
			num := first + uint64(i)
			want[i] = LedgerEntry{ID: strconv.FormatUint(num, 10), Account: "a",
				Time:  time.Unix(sec+int64(i%3), int64(nsec%1e9)).UTC(),
				KeyID: keyID, Model: model[:len(model)*(i%2)], HoldID: holdID, Kind: EntrySettle, Note: note[:len(note)/(i+1)],
				Amount: amount + int64(i), BalanceAfter: -amount, Charged: int64(i)}
		}
		key, val := writeBlock(want)
		keyN, err := entryKeyNumber([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		var got []LedgerEntry
		err = decodeLedgerValue("a", keyN, val, 0, math.MaxUint64, func(e LedgerEntry) bool {
			got = append(got, e)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, "the block", got, want)
	})
}

// A batch closes a block at maxBlockEntries entries, past maxBlockBytes, and where the numbers
// do not follow; every block reads back as the entries it was given, keyed by its last.
func TestBatchAccountBlocks(t *testing.T) {
	entries := blockTestEntries("acme", 1, 2*maxBlockEntries+10)
	entries[3].Note = string(make([]byte, maxBlockBytes)) // closes its block after it
	var ba batchAccount
	for i := range entries {
		n := mustNumber(t, entries[i].ID)
		if n >= 100 {
			n += 900 // a gap: another block from here
			entries[i].ID = strconv.FormatUint(n, 10)
		}
		ba.addEntry(&entries[i], n)
	}
	var sizes []int
	var got []LedgerEntry
	for _, b := range ba.blocks {
		sizes = append(sizes, b.n)
		err := decodeLedgerValue("acme", b.last, b.buf, 0, math.MaxUint64, func(e LedgerEntry) bool {
			got = append(got, e)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{4, maxBlockEntries, 99 - 4 - maxBlockEntries, len(entries) - 99}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Errorf("blocks of %v entries, want %v", sizes, want)
	}
	sameEntries(t, "the blocks", got, entries)
}

// A ledgerBlockV1 block, as the versions before ledgerBlockV2 wrote it (entries 41 to 43: a
// request's hold and settlement, then a credit), still reads as the entries it was written from.
func TestLedgerBlockV1StillReads(t *testing.T) {
	const v1 = "0229f08bd4b00d959aef3a076b65795f61310c6770742d346f2d6d696e69001e686f6c645f30313233343536373839616263646566303132333435363705686f6c6400bfb802c0efd3b9070000cdb1ef3a0000000007736574746c65009ca502dc94d6b907a41304959aef3a0101077461736b5f39010763726564697407746f702d757080ade204dcc1b8be0700"
	val, err := hex.DecodeString(v1)
	if err != nil {
		t.Fatal(err)
	}
	var got []LedgerEntry
	if err := decodeLedgerValue("acme", 43, val, 0, math.MaxUint64, func(e LedgerEntry) bool {
		got = append(got, e)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "the V1 block", got, blockGoldenEntries())
}

// blockGoldenEntries are the entries of TestLedgerBlockV1StillReads's block, numbered 41 to 43.
func blockGoldenEntries() []LedgerEntry {
	t0 := time.Date(2026, 11, 28, 7, 30, 0, 123456789, time.UTC)
	const holdID = "hold_0123456789abcdef01234567"
	return []LedgerEntry{
		{ID: "41", Account: "acme", Time: t0, KeyID: "key_a1", Model: "gpt-4o-mini", HoldID: holdID, Kind: EntryHold,
			Amount: -20000, BalanceAfter: 999980000},
		{ID: "42", Account: "acme", Time: t0.Add(3 * time.Microsecond), KeyID: "key_a1", Model: "gpt-4o-mini", HoldID: holdID,
			Kind: EntrySettle, Amount: 18766, BalanceAfter: 999998766, Charged: 1234},
		{ID: "43", Account: "acme", Time: t0.Add(2 * time.Second), Ref: "task_9", Kind: EntryCredit, Amount: 5000000,
			BalanceAfter: 1004998766, Note: "top-up"},
	}
}

// A request's hold and settlement (a hold id the gateway makes, a known kind, microseconds
// apart) take at most 48 bytes of a block, and every field reads back: hold ids and kinds that
// are not of the packed forms too (upper-case hex, another length, an unknown or empty kind),
// time going back within a second and across seconds, balances going up and down.
func TestLedgerBlockV2Compact(t *testing.T) {
	entries := blockGoldenEntries()
	var b entryBlock
	for i := range entries[:2] {
		b.add(&entries[i], uint64(41+i))
	}
	first := len(b.buf)
	for i := range 10 {
		hold := entries[0]
		hold.HoldID = fmt.Sprintf("hold_%024x", 1000+i)
		hold.Time = hold.Time.Add(time.Duration(10+i) * time.Microsecond)
		settle := entries[1]
		settle.HoldID, settle.Time = hold.HoldID, hold.Time.Add(40*time.Microsecond)
		b.add(&hold, b.last+1)
		b.add(&settle, b.last+1)
	}
	if per := (len(b.buf) - first) / 10; per > 48 {
		t.Errorf("a request's hold and settlement took %d bytes, want at most 48", per)
	}

	odd := blockOddEntries()
	key, val := writeBlock(odd)
	var got []LedgerEntry
	if err := decodeLedgerValue("acme", mustNumber(t, odd[len(odd)-1].ID), val, 0, math.MaxUint64, func(e LedgerEntry) bool {
		got = append(got, e)
		return true
	}); err != nil {
		t.Fatal(key, err)
	}
	sameEntries(t, "the block", got, odd)
}

// blockOddEntries are entries 41 to 44 of hold ids and kinds that are not of the packed forms
// (upper-case hex, another length, an unknown or empty kind), time going back within a second
// and across seconds, balances at their bounds.
func blockOddEntries() []LedgerEntry {
	odd := blockGoldenEntries()
	odd[0].HoldID = "hold_0123456789ABCDEF01234567"
	odd[1].HoldID = "hold_0123456789abcdef0123456"
	odd[1].Kind = ""
	odd[1].Time = odd[0].Time.Add(-time.Nanosecond)
	odd[2].Kind = "rebate"
	odd[2].HoldID = "hold_0123456789abcdef01234567"
	odd[2].Time = time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
	odd[2].BalanceAfter = math.MinInt64
	return append(odd, LedgerEntry{ID: "44", Account: "acme", Time: odd[0].Time, HoldID: odd[2].HoldID, Kind: EntryAdjust,
		BalanceAfter: math.MaxInt64, Amount: math.MinInt64})
}
