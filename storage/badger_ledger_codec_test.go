package storage

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Every field of the ledger's binary records reads back as written: times as the same
// instant (in UTC), the zero time as zero, negative amounts, empty and long strings.
func TestLedgerRecordsRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 5, 40, 1, 123456789, time.FixedZone("X", 3600))
	bal := balanceRecord{Amount: -MaxAmount, Held: 42, Limited: true, Entries: 1 << 40}
	var gotBal balanceRecord
	if err := gotBal.decode(bal.encode()); err != nil || gotBal != bal {
		t.Errorf("balance %+v read back as %+v, %v", bal, gotBal, err)
	}
	hold := holdRecord{Hold: Hold{ID: "hold_1", Account: "acme", KeyID: "k", Model: "veo-3", Ref: "task-1", Amount: MaxAmount,
		Budget: Budget{Limit: 7, Period: BudgetDay}, Deadline: at, Created: at.Add(-time.Minute), Bound: true, State: HoldSettled},
		EntryN: 9, Budget: "lk/k\x00d2026-11-27"}
	var gotHold holdRecord
	if err := gotHold.decode("hold_1", hold.encode()); err != nil {
		t.Fatal(err)
	}
	if !gotHold.Hold.Deadline.Equal(at) || !gotHold.Hold.Created.Equal(at.Add(-time.Minute)) {
		t.Errorf("hold times read back as %s and %s", gotHold.Hold.Deadline, gotHold.Hold.Created)
	}
	gotHold.Hold.Deadline, gotHold.Hold.Created = hold.Hold.Deadline, hold.Hold.Created
	if gotHold != hold {
		t.Errorf("hold %+v read back as %+v", hold, gotHold)
	}
	unbound := holdRecord{Hold: Hold{ID: "h", Account: "a", State: HoldOpen}}
	if err := gotHold.decode("h", unbound.encode()); err != nil || !gotHold.Hold.Deadline.IsZero() || gotHold != unbound {
		t.Errorf("a hold without deadline read back as %+v, %v", gotHold, err)
	}
	e := LedgerEntry{ID: "12", Time: at, Account: "acme", KeyID: "k", Model: "m", Ref: "r", HoldID: "h", Kind: EntrySettle,
		Amount: -5, BalanceAfter: -MaxAmount, Charged: 9, Note: string(make([]byte, 300))}
	var gotEntry LedgerEntry
	if err := decodeEntry(encodeEntry(e, 12), &gotEntry); err != nil || !gotEntry.Time.Equal(at) {
		t.Fatalf("entry read back as %+v, %v", gotEntry, err)
	}
	gotEntry.Time = e.Time
	if gotEntry != e {
		t.Errorf("entry %+v read back as %+v", e, gotEntry)
	}
	for name, err := range map[string]error{
		"empty hold":         gotHold.decode("hold_1", []byte{ledgerRecordV1}),
		"empty V2 hold":      gotHold.decode("hold_1", []byte{ledgerHoldV2}),
		"cut hold":           gotHold.decode("hold_1", hold.encode()[:10]),
		"balance and more":   gotBal.decode(append(bal.encode(), 0)),
		"balance's bad bool": gotBal.decode([]byte{ledgerRecordV1, 0, 0, 2, 0}),
		"entry's bad nanos":  decodeEntry([]byte{ledgerRecordV1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, &gotEntry),
	} {
		if !errors.Is(err, errCorruptLedgerRecord) {
			t.Errorf("%s: %v; want errCorruptLedgerRecord", name, err)
		}
	}
}

// goldenHoldV1 is a bound hold's record as the previous version's encoder wrote it
// (ledgerRecordV1, with the hold's id), the hold of goldenHold.
const goldenHoldV1 = "011d686f6c645f3062636365643936376132633862336236313261326336630562656e6368106b65795f6263306262" +
	"313937303263660b62656e63682d766964656f1b6367742d32303236313132373232323731352d3232696e6537787af0b51f0e" +
	"03646179a6c7d0b00d959aef3a868fd0b00d959aef3a01046f70656e091f6c6b2f6b65795f6263306262313937303263660064" +
	"323032362d31312d3237"

func goldenHold() holdRecord {
	at := time.Date(2026, 11, 27, 22, 27, 15, 123456789, time.UTC)
	return holdRecord{Hold: Hold{ID: "hold_0bcced967a2c8b3b612a2c6c", Account: "bench", KeyID: "key_bc0bb19702cf",
		Model: "bench-video", Ref: "cgt-20261127222715-22ine7xz", Amount: 257400, Budget: Budget{Limit: 7, Period: BudgetDay},
		Deadline: at.Add(time.Hour), Created: at, Bound: true, State: HoldOpen}, EntryN: 9, Budget: "lk/key_bc0bb19702cf\x00d2026-11-27"}
}

// A hold record of the previous version reads as the hold it was written from, whatever id it
// is read under (it names its own); this version's record leaves the id out, to its key, and
// reads back the same.
func TestLedgerHoldRecordV1Golden(t *testing.T) {
	v1, err := hex.DecodeString(goldenHoldV1)
	if err != nil {
		t.Fatal(err)
	}
	want := goldenHold()
	for _, id := range []string{want.Hold.ID, "another"} {
		var got holdRecord
		if err := got.decode(id, v1); err != nil || got != want {
			t.Fatalf("the V1 record read under %s as %+v, %v; want %+v", id, got, err, want)
		}
	}
	v2 := want.encode()
	if v2[0] != ledgerHoldV2 || len(v2) != len(v1)-1-len(want.Hold.ID) {
		t.Errorf("the V2 record is %d bytes starting %d; the V1 one %d", len(v2), v2[0], len(v1))
	}
	var got holdRecord
	if err := got.decode(want.Hold.ID, v2); err != nil || got != want {
		t.Fatalf("the V2 record read as %+v, %v; want %+v", got, err, want)
	}
}

// A store holding a hold record of the previous version serves it as that hold.
func TestBadgerReadsV1HoldRecords(t *testing.T) {
	want := goldenHold()
	b, err := OpenBadger(t.TempDir(), BadgerOptions{Now: func() time.Time { return want.Hold.Created }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v1, err := hex.DecodeString(goldenHoldV1)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(holdKey(want.Hold.ID)), v1) }); err != nil {
		t.Fatal(err)
	}
	got, err := b.HoldByID(context.Background(), want.Hold.ID)
	if err != nil || !got.Deadline.Equal(want.Hold.Deadline) || got.Ref != want.Hold.Ref || got.Account != "bench" || got.ID != want.Hold.ID {
		t.Fatalf("HoldByID = %+v, %v; want %+v", got, err, want.Hold)
	}
}

// Records written in JSON by earlier versions are still read, and a hold taken by one ends
// and answers its retry as a new one does.
func TestLedgerReadsJSONRecordsOfEarlierVersions(t *testing.T) {
	ctx, now := context.Background(), time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	b, err := OpenBadger(t.TempDir(), BadgerOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// As an earlier version wrote a credit of 100 and a hold of 10: balance, entries and the
	// hold (with its whole entry) in JSON.
	credit := LedgerEntry{ID: "1", Time: now, Account: "acme", Kind: EntryCredit, Amount: 100, BalanceAfter: 100}
	holdEntry := LedgerEntry{ID: "2", Time: now, Account: "acme", KeyID: "k", HoldID: "old", Kind: EntryHold, Amount: -10, BalanceAfter: 90}
	old := struct {
		Hold  Hold        `json:"hold"`
		Entry LedgerEntry `json:"entry"`
	}{Hold{ID: "old", Account: "acme", KeyID: "k", Amount: 10, Deadline: now.Add(time.Hour), Created: now, State: HoldOpen}, holdEntry}
	err = b.db.Update(func(txn *badger.Txn) error {
		for key, v := range map[string]any{
			balanceKey("acme"):  balanceRecord{Amount: 90, Held: 10, Limited: true, Entries: 2},
			entryKey("acme", 1): credit, entryKey("acme", 2): holdEntry, holdKey("old"): old,
		} {
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			if err := txn.Set([]byte(key), raw); err != nil {
				return err
			}
		}
		return txn.Set([]byte(openHoldKey(old.Hold)), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	h, e, err := b.Hold(ctx, Hold{ID: "old", Account: "acme", KeyID: "k", Amount: 10, Deadline: now.Add(time.Hour)}, now)
	if err != nil || h.State != HoldOpen || e.ID != "2" || e.Amount != -10 || e.BalanceAfter != 90 {
		t.Fatalf("the retried old hold = %+v %+v, %v", h, e, err)
	}
	if _, err := b.Settle(ctx, "old", 4, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Hold(ctx, Hold{ID: "new", Account: "acme", Amount: 50, Deadline: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	entries, _, err := b.LedgerPage(ctx, "acme", "", 10)
	if err != nil || len(entries) != 4 {
		t.Fatalf("ledger %+v, %v", entries, err)
	}
	var sum int64
	for i, e := range entries {
		sum += e.Amount
		if e.BalanceAfter != sum || e.ID != []string{"1", "2", "3", "4"}[i] {
			t.Errorf("entry %d = %+v; running sum %d", i, e, sum)
		}
	}
	if bal, err := b.Balance(ctx, "acme"); err != nil || bal.Amount != sum || bal.Amount != 100-4-50 || bal.Held != 50 {
		t.Fatalf("balance %+v, %v; ledger sums to %d", bal, err, sum)
	}
}

// encodeEntry writes an entry as one value (ledgerRecordV1), as the versions before ledger blocks
// did: the old data tests read.
func encodeEntry(e LedgerEntry, n uint64) []byte {
	w := newRecord(96 + len(e.Account) + len(e.KeyID) + len(e.Model) + len(e.Ref) + len(e.HoldID) + len(e.Note))
	w.uint(n)
	w.time(e.Time)
	for _, s := range [...]string{e.Account, e.KeyID, e.Model, e.Ref, e.HoldID, e.Kind} {
		w.str(s)
	}
	w.int(e.Amount)
	w.int(e.BalanceAfter)
	w.int(e.Charged)
	w.str(e.Note)
	return w
}
