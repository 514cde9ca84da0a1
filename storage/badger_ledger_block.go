package storage

import (
	"encoding/binary"
	"strconv"
	"time"
)

// Ledger blocks: the entries one batch of the group commit writes for one account are one Badger
// value (a block) under one key, le/<account>\x00<number of its last entry, 20 digits>, instead of
// one key per entry. Badger's cost is per entry (skiplist insert, log header, table index) as
// much as per byte, and under load a batch carries many requests of the same account. Keyed by
// its last entry, a block is found by a forward seek to any number it holds: the first key at
// or after entry n's key is the block holding n. The entries of a block are consecutive.
//
// Values written one entry per key (a ledgerRecordV1 entry, or JSON before it) are read as
// blocks of one entry, so that older data and blocks sit side by side in one ledger.
//
// Layout of a block (varint, uvarint and string bytes as in badger_ledger_codec.go):
//
//	ledgerBlockV1, the number of the first entry (uvarint), then each entry:
//	time: varint Unix seconds after the previous entry's (the first: after 0), uvarint nanoseconds
//	key id, model, ref, hold id, kind, note: each uvarint 0 when it is the previous entry's
//	    (the first entry's previous fields are empty), else uvarint length+1 then its bytes
//	amount, balance after, charged: varint
//
// The account is the key's, and the number of an entry is the first's plus its place.
const ledgerBlockV1 byte = 2

// maxBlockEntries bounds the entries of one block, so that reading one entry (the end of a hold
// read back from disk) decodes at most this many, and maxBlockBytes its size, so that a block
// reaches Badger's value log (valueThreshold) only when one entry alone would; a batch starts
// another block past either.
const (
	maxBlockEntries = 64
	maxBlockBytes   = 64 << 10
)

// blockStartSize is the room a new block's buffer starts with (an entry takes 20 to 80 bytes).
const blockStartSize = 1024

// blockStrings are the string fields of an entry that a block writes as "same as before".
type blockStrings [6]string

func entryStrings(e *LedgerEntry) blockStrings {
	return blockStrings{e.KeyID, e.Model, e.Ref, e.HoldID, e.Kind, e.Note}
}

// entryBlock is a block being written: the entries of one account in one batch.
type entryBlock struct {
	buf []byte
	// last is the number of its last entry; n how many it has.
	last uint64
	n    int
	sec  int64
	prev blockStrings
}

// add appends the entry numbered n, which follows the block's last one.
func (b *entryBlock) add(e *LedgerEntry, n uint64) {
	if b.n == 0 {
		if b.buf == nil {
			b.buf = make([]byte, 0, blockStartSize)
		}
		b.buf = binary.AppendUvarint(append(b.buf[:0], ledgerBlockV1), n)
		b.sec, b.prev = 0, blockStrings{}
	}
	sec := e.Time.Unix()
	b.buf = binary.AppendVarint(b.buf, sec-b.sec)
	b.buf = binary.AppendUvarint(b.buf, uint64(e.Time.Nanosecond()))
	b.sec = sec
	for i, s := range entryStrings(e) {
		if s == b.prev[i] {
			b.buf = append(b.buf, 0)
			continue
		}
		b.buf = append(binary.AppendUvarint(b.buf, uint64(len(s))+1), s...)
		b.prev[i] = s
	}
	b.buf = binary.AppendVarint(b.buf, e.Amount)
	b.buf = binary.AppendVarint(b.buf, e.BalanceAfter)
	b.buf = binary.AppendVarint(b.buf, e.Charged)
	b.last = n
	b.n++
}

// blockReader reads the entries of a block in order. Its fields reference the block's bytes,
// which must stay as they are while it is used (inside Badger's Item.Value).
type blockReader struct {
	r recordReader
	// n is the number of the entry next read.
	n uint64
	// The fields of the entry last read.
	sec, amount, after, charged int64
	nsec                        uint64
	strs                        [6][]byte
}

// newBlockReader starts reading a block (a value that starts with ledgerBlockV1).
func newBlockReader(val []byte) blockReader {
	br := blockReader{r: recordReader{b: val[1:]}}
	br.n = br.r.uint()
	return br
}

// next reads the next entry and returns its number; it reports false at the block's end or on
// corruption (r.err). Its strings are made only by entry.
func (br *blockReader) next() (uint64, bool) {
	if br.r.err != nil || len(br.r.b) == 0 {
		return 0, false
	}
	r := &br.r
	br.sec += r.int()
	br.nsec = r.uint()
	for i := range br.strs {
		l := r.uint()
		switch {
		case r.err != nil, l == 0:
		case l-1 > uint64(len(r.b)):
			r.err = errCorruptLedgerRecord
		default:
			br.strs[i], r.b = r.b[:l-1], r.b[l-1:]
		}
	}
	br.amount, br.after, br.charged = r.int(), r.int(), r.int()
	if r.err == nil && br.nsec >= 1e9 {
		r.err = errCorruptLedgerRecord
	}
	if r.err != nil {
		return 0, false
	}
	br.n++
	return br.n - 1, true
}

// entry is the entry last read, numbered n, of account.
func (br *blockReader) entry(account string, n uint64) LedgerEntry {
	return LedgerEntry{ID: strconv.FormatUint(n, 10), Time: time.Unix(br.sec, int64(br.nsec)).UTC(),
		Account: account, KeyID: string(br.strs[0]), Model: string(br.strs[1]), Ref: string(br.strs[2]),
		HoldID: string(br.strs[3]), Kind: string(br.strs[4]), Note: string(br.strs[5]),
		Amount: br.amount, BalanceAfter: br.after, Charged: br.charged}
}

// decodeLedgerValue calls emit, in order, for each entry numbered from..to of a ledger value
// stored under the key of entry keyN (a block, or one entry), until emit answers false. It
// checks that the numbers are the key's: a block ends at keyN, a one-entry value is keyN.
func decodeLedgerValue(account string, keyN uint64, val []byte, from, to uint64, emit func(LedgerEntry) bool) error {
	if len(val) == 0 || val[0] != ledgerBlockV1 {
		if keyN < from || keyN > to {
			return nil
		}
		var e LedgerEntry
		if err := decodeEntry(val, &e); err != nil {
			return err
		}
		if e.ID != strconv.FormatUint(keyN, 10) {
			return errCorruptLedgerRecord
		}
		emit(e)
		return nil
	}
	br := newBlockReader(val)
	for {
		n, ok := br.next()
		if !ok {
			break
		}
		if n >= from && n <= to && !emit(br.entry(account, n)) {
			return nil
		}
	}
	if err := br.r.err; err != nil {
		return err
	}
	if br.n == 0 || br.n-1 != keyN {
		return errCorruptLedgerRecord
	}
	return nil
}
