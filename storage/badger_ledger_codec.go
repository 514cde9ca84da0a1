package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The ledger's records in Badger (balances, holds, entries) are written in a compact binary
// form: every request wrote two holds, two entries and two balances and read them back, and
// in JSON (with RFC 3339 times) these were a third of its ledger work and most of the bytes
// Badger copies into its memtables and tables. A record starts with ledgerRecordV1; a record
// that starts with '{' is JSON, as this version's predecessors wrote it, and is still read.
//
// Layout (varint: encoding/binary's zig-zag Varint; uvarint: Uvarint; string: uvarint length
// then bytes; time: varint Unix seconds, uvarint nanoseconds, read back in UTC):
//
//	balance: amount varint, held varint, limited byte, entries uvarint
//	hold:    id, account, key id, model, ref string; amount, budget limit varint; budget period
//	         string; deadline, created time; bound byte; state string; entry number uvarint;
//	         budget counter string; then, only for a hold the reconciler released, a byte 1
//	         (Hold.Reconciled; versions before it read such a record as corrupt)
//	entry:   number uvarint; time; account, key id, model, ref, hold id, kind string; amount,
//	         balance after, charged varint; note string
//
// Entries are now written in blocks (ledgerBlockV1, a byte of 2: the entries of one account in
// one batch, laid out in badger_ledger_block.go); the one-entry form above is what versions
// before blocks wrote, and is read as a block of one.
const ledgerRecordV1 byte = 1

// ledgerHoldV2 starts the hold record this version writes: the hold layout above without the
// id, which the record's key (lh/<id>) holds. Hold records of ledgerRecordV1 are still read;
// earlier versions report this form as corrupt.
const ledgerHoldV2 byte = 3

var errCorruptLedgerRecord = errors.New("ledger: corrupt record")

// recordWriter appends the fields of a binary record.
type recordWriter []byte

// newRecord starts a binary record of about capacity bytes.
func newRecord(capacity int) recordWriter {
	w := make(recordWriter, 1, capacity)
	w[0] = ledgerRecordV1
	return w
}

func (w *recordWriter) str(s string) {
	*w = append(binary.AppendUvarint(*w, uint64(len(s))), s...)
}
func (w *recordWriter) int(v int64)   { *w = binary.AppendVarint(*w, v) }
func (w *recordWriter) uint(v uint64) { *w = binary.AppendUvarint(*w, v) }
func (w *recordWriter) bool(v bool) {
	if v {
		*w = append(*w, 1)
	} else {
		*w = append(*w, 0)
	}
}
func (w *recordWriter) time(t time.Time) {
	w.int(t.Unix())
	w.uint(uint64(t.Nanosecond()))
}

// recordReader reads the fields of a binary record; the first field that does not decode sets
// err, and every later read returns a zero value.
type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) uint() uint64 { return readNumber(r, binary.Uvarint) }
func (r *recordReader) int() int64   { return readNumber(r, binary.Varint) }

// readNumber reads a varint or uvarint (read) of r.
func readNumber[T int64 | uint64](r *recordReader, read func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := read(r.b)
	if n <= 0 {
		r.err = errCorruptLedgerRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) str() string {
	n := r.uint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errCorruptLedgerRecord
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *recordReader) bool() bool {
	if r.err != nil || len(r.b) == 0 || r.b[0] > 1 {
		r.err = errCorruptLedgerRecord
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

func (r *recordReader) time() time.Time {
	sec, nsec := r.int(), r.uint()
	if r.err != nil || nsec >= 1e9 {
		r.err = errCorruptLedgerRecord
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// end reports the error of the record's reads, and trailing bytes as corruption.
func (r *recordReader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = errCorruptLedgerRecord
	}
	return r.err
}

func (rec balanceRecord) encode() []byte {
	w := newRecord(32)
	w.int(rec.Amount)
	w.int(rec.Held)
	w.bool(rec.Limited)
	w.uint(rec.Entries)
	return w
}

func (rec *balanceRecord) decode(val []byte) error {
	if len(val) == 0 || val[0] != ledgerRecordV1 {
		return json.Unmarshal(val, rec)
	}
	r := recordReader{b: val[1:]}
	*rec = balanceRecord{Amount: r.int(), Held: r.int(), Limited: r.bool(), Entries: r.uint()}
	return r.end()
}

func (rec holdRecord) encode() []byte {
	h := rec.Hold
	w := newRecord(128 + len(h.Account) + len(h.KeyID) + len(h.Model) + len(h.Ref) + len(rec.Budget))
	w[0] = ledgerHoldV2
	for _, s := range [...]string{h.Account, h.KeyID, h.Model, h.Ref} {
		w.str(s)
	}
	w.int(h.Amount)
	w.int(h.Budget.Limit)
	w.str(h.Budget.Period)
	w.time(h.Deadline)
	w.time(h.Created)
	w.bool(h.Bound)
	w.str(h.State)
	w.uint(rec.EntryN)
	w.str(rec.Budget)
	if h.Reconciled {
		w.bool(true)
	}
	return w
}

// decode reads the record of the hold id in either binary form, or in JSON.
func (rec *holdRecord) decode(id string, val []byte) error {
	if len(val) == 0 || val[0] != ledgerRecordV1 && val[0] != ledgerHoldV2 {
		var old jsonHoldRecord
		if err := json.Unmarshal(val, &old); err != nil {
			return err
		}
		// Written with its whole hold entry; the entry's number is its ID.
		n, err := strconv.ParseUint(old.Entry.ID, 10, 64)
		if err != nil {
			return errCorruptLedgerRecord
		}
		*rec = holdRecord{Hold: old.Hold, EntryN: n, Budget: old.Budget}
		return nil
	}
	r := recordReader{b: val[1:]}
	h := Hold{ID: id}
	if val[0] == ledgerRecordV1 {
		h.ID = r.str()
	}
	h.Account, h.KeyID, h.Model, h.Ref = r.str(), r.str(), r.str(), r.str()
	h.Amount, h.Budget.Limit, h.Budget.Period = r.int(), r.int(), r.str()
	h.Deadline, h.Created = r.time(), r.time()
	h.Bound, h.State = r.bool(), r.str()
	*rec = holdRecord{Hold: h, EntryN: r.uint(), Budget: r.str()}
	if r.err == nil && len(r.b) > 0 {
		rec.Hold.Reconciled = r.bool()
	}
	return r.end()
}

func decodeEntry(val []byte, e *LedgerEntry) error {
	if len(val) == 0 || val[0] != ledgerRecordV1 {
		return json.Unmarshal(val, e)
	}
	r := recordReader{b: val[1:]}
	n := r.uint()
	*e = LedgerEntry{Time: r.time(), Account: r.str(), KeyID: r.str(), Model: r.str(), Ref: r.str(),
		HoldID: r.str(), Kind: r.str(), Amount: r.int(), BalanceAfter: r.int(), Charged: r.int(), Note: r.str()}
	e.ID = strconv.FormatUint(n, 10)
	return r.end()
}

// txnGetRecord reads the ledger record under key with decode; a missing one is ErrNotFound.
func txnGetRecord(txn *badger.Txn, key string, decode func(val []byte) error) error {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	return item.Value(decode)
}

func txnHold(txn *badger.Txn, holdID string, rec *holdRecord) error {
	return txnGetRecord(txn, holdKey(holdID), func(val []byte) error { return rec.decode(holdID, val) })
}
