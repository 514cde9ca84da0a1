package storage

import (
	"encoding/binary"
	"encoding/hex"
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
//	ledgerBlockV2, the number of the first entry (uvarint), then each entry:
//	time: varint Unix seconds after the previous entry's, varint nanoseconds after the
//	    previous entry's (the first entry's previous time is 0 s, 0 ns)
//	key id, model, ref, note: each uvarint 0 when it is the previous entry's (the first
//	    entry's previous fields are empty), else uvarint length+1 then its bytes
//	hold id: uvarint 0 when it is the previous entry's, 1 when it is "hold_" and 24
//	    lower-case hex digits (the ids the gateway makes): their 12 bytes follow; else
//	    uvarint length+2 then its bytes
//	kind: a byte, its number in blockKinds, or 0 then uvarint length and its bytes
//	amount: varint; balance after: varint change from the previous entry's (the first
//	    entry's previous is 0); charged: varint
//
// A request's hold and its settlement take about 50 bytes in this form, against about 90 in
// ledgerBlockV1 (the hold id and the kind written out, times in whole nanoseconds, balances in
// full), which this version still reads: V1 has the same layout except that the time's
// nanoseconds are an uvarint of their own, the hold id and the kind are strings as the key id
// is (uvarint 0 or length+1, in the order key id, model, ref, hold id, kind, note), and the
// balance after is a varint of its own. Every byte a request makes Badger keep is paid again
// in its memtable's log and arena, the page faults of fresh pages, and the memtable's flush.
const (
	ledgerBlockV1 byte = 2
	ledgerBlockV2 byte = 4
)

// blockKinds are the entry kinds a ledgerBlockV2 writes as one byte: the index of each.
var blockKinds = [...]string{1: EntryHold, 2: EntrySettle, 3: EntryRelease, 4: EntryCredit, 5: EntryAdjust}

// holdIDPrefix and holdIDBytes: a hold id the gateway makes is holdIDPrefix and the lower-case
// hex of holdIDBytes random bytes (accounting.newHoldID); a block packs such an id.
const (
	holdIDPrefix = "hold_"
	holdIDBytes  = 12
)

// maxBlockEntries bounds the entries of one block, so that reading one entry (the end of a hold
// read back from disk) decodes at most this many, and maxBlockBytes its size, so that a block
// reaches Badger's value log (valueThreshold) only when one entry alone would; a batch starts
// another block past either.
const (
	maxBlockEntries = 64
	maxBlockBytes   = 64 << 10
)

// blockStartSize is the room a new block's buffer starts with (an entry takes 15 to 80 bytes, a
// request's hold and settlement about 50): a batch carries a few requests of an account, and a
// block of more grows by append.
const blockStartSize = 256

// The places in blockReader.strs of the string fields an entry's block holds, in the order
// ledgerBlockV1 writes them: key id, model, ref, hold id, kind, note. ledgerBlockV2 writes the
// hold id and the kind apart.
const (
	fieldHoldID = 3
	fieldKind   = 4
)

// entryBlock is a block being written: the entries of one account in one batch.
type entryBlock struct {
	buf []byte
	// last is the number of its last entry; n how many it has.
	last uint64
	n    int
	// The previous entry's time, balance after and strings (but its kind).
	sec, nsec, after                int64
	keyID, model, ref, holdID, note string
}

// add appends the entry numbered n, which follows the block's last one.
func (b *entryBlock) add(e *LedgerEntry, n uint64) {
	if b.n == 0 {
		if b.buf == nil {
			b.buf = make([]byte, 0, blockStartSize)
		}
		b.buf = binary.AppendUvarint(append(b.buf[:0], ledgerBlockV2), n)
		*b = entryBlock{buf: b.buf}
	}
	sec, nsec := e.Time.Unix(), int64(e.Time.Nanosecond())
	buf := binary.AppendVarint(b.buf, sec-b.sec)
	buf = binary.AppendVarint(buf, nsec-b.nsec)
	b.sec, b.nsec = sec, nsec
	buf = appendBlockString(buf, e.KeyID, &b.keyID)
	buf = appendBlockString(buf, e.Model, &b.model)
	buf = appendBlockString(buf, e.Ref, &b.ref)
	if e.HoldID == b.holdID {
		buf = append(buf, 0)
	} else {
		buf = appendHoldID(buf, e.HoldID)
		b.holdID = e.HoldID
	}
	buf = appendBlockString(buf, e.Note, &b.note)
	buf = appendKind(buf, e.Kind)
	buf = binary.AppendVarint(buf, e.Amount)
	buf = binary.AppendVarint(buf, e.BalanceAfter-b.after)
	b.after = e.BalanceAfter
	b.buf = binary.AppendVarint(buf, e.Charged)
	b.last = n
	b.n++
}

// appendBlockString appends a string field: 0 when it is the previous entry's (prev), else its
// length+1 and its bytes, and makes it prev.
func appendBlockString(buf []byte, s string, prev *string) []byte {
	if s == *prev {
		return append(buf, 0)
	}
	*prev = s
	return append(binary.AppendUvarint(buf, uint64(len(s))+1), s...)
}

// appendHoldID appends a hold id that is not the previous entry's: packed when it is one the
// gateway makes ("hold_" and lower-case hex digits only, so that packing it and writing it back
// out gives it again), else as a string.
func appendHoldID(buf []byte, id string) []byte {
	if len(id) == len(holdIDPrefix)+2*holdIDBytes && id[:len(holdIDPrefix)] == holdIDPrefix {
		digits := id[len(holdIDPrefix):]
		var raw [holdIDBytes]byte
		var bad byte
		for i := range raw {
			hi, lo := lowerHexDigit[digits[2*i]], lowerHexDigit[digits[2*i+1]]
			bad |= hi | lo
			raw[i] = hi<<4 | lo
		}
		if bad < 16 {
			return append(append(buf, 1), raw[:]...)
		}
	}
	return append(binary.AppendUvarint(buf, uint64(len(id))+2), id...)
}

// lowerHexDigit is the value of each lower-case hex digit, and 0xff for every other byte.
var lowerHexDigit = func() (t [256]byte) {
	for c := range t {
		switch {
		case c >= '0' && c <= '9':
			t[c] = byte(c - '0')
		case c >= 'a' && c <= 'f':
			t[c] = byte(c - 'a' + 10)
		default:
			t[c] = 0xff
		}
	}
	return t
}()

// appendKind appends an entry's kind: its number in blockKinds, or 0 and the kind as a string.
func appendKind(buf []byte, kind string) []byte {
	for i, k := range blockKinds {
		if i > 0 && k == kind {
			return append(buf, byte(i))
		}
	}
	return append(binary.AppendUvarint(append(buf, 0), uint64(len(kind))), kind...)
}

// blockReader reads the entries of a block in order. Its fields reference the block's bytes,
// which must stay as they are while it is used (inside Badger's Item.Value).
type blockReader struct {
	r recordReader
	// v2 tells a ledgerBlockV2 from a ledgerBlockV1.
	v2 bool
	// n is the number of the entry next read.
	n uint64
	// The fields of the entry last read.
	sec, amount, after, charged int64
	nsec                        int64
	strs                        [6][]byte
	// holdID holds a packed hold id written out (strs[fieldHoldID] then refers to it).
	holdID [len(holdIDPrefix) + 2*holdIDBytes]byte
}

// newBlockReader starts reading a block (a value that starts with ledgerBlockV1 or V2).
func newBlockReader(val []byte) blockReader {
	br := blockReader{r: recordReader{b: val[1:]}, v2: val[0] == ledgerBlockV2}
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
	if br.v2 {
		br.nsec += r.int()
	} else {
		br.nsec = int64(r.uint())
	}
	for i := range br.strs {
		switch {
		case br.v2 && i == fieldKind:
		case br.v2 && i == fieldHoldID:
			br.readHoldID()
		default:
			br.readString(i, 1)
		}
	}
	if br.v2 {
		br.readKind()
	}
	br.amount = r.int()
	if br.v2 {
		br.after += r.int()
	} else {
		br.after = r.int()
	}
	br.charged = r.int()
	if r.err == nil && (br.nsec < 0 || br.nsec >= 1e9) {
		r.err = errCorruptLedgerRecord
	}
	if r.err != nil {
		return 0, false
	}
	br.n++
	return br.n - 1, true
}

// readString reads string field i: uvarint 0 (the previous entry's), else its length+skip and
// its bytes.
func (br *blockReader) readString(i int, skip uint64) {
	r := &br.r
	l := r.uint()
	switch {
	case r.err != nil, l == 0:
	case l < skip || l-skip > uint64(len(r.b)):
		r.err = errCorruptLedgerRecord
	default:
		br.strs[i], r.b = r.b[:l-skip], r.b[l-skip:]
	}
}

// readHoldID reads a ledgerBlockV2 hold id (see appendHoldID).
func (br *blockReader) readHoldID() {
	r := &br.r
	if r.err != nil || len(r.b) == 0 || r.b[0] != 1 {
		br.readString(fieldHoldID, 2)
		return
	}
	if len(r.b) < 1+holdIDBytes {
		r.err = errCorruptLedgerRecord
		return
	}
	copy(br.holdID[:], holdIDPrefix)
	hex.Encode(br.holdID[len(holdIDPrefix):], r.b[1:1+holdIDBytes])
	br.strs[fieldHoldID], r.b = br.holdID[:], r.b[1+holdIDBytes:]
}

// readKind reads a ledgerBlockV2 kind (see appendKind).
func (br *blockReader) readKind() {
	r := &br.r
	if r.err != nil {
		return
	}
	if len(r.b) == 0 {
		r.err = errCorruptLedgerRecord
		return
	}
	c := r.b[0]
	r.b = r.b[1:]
	switch {
	case c == 0:
		br.strs[fieldKind] = nil
		br.readString(fieldKind, 0)
	case int(c) < len(blockKinds):
		br.strs[fieldKind] = blockKindBytes[c]
	default:
		r.err = errCorruptLedgerRecord
	}
}

// blockKindBytes are blockKinds as bytes, for blockReader.strs.
var blockKindBytes = func() (b [len(blockKinds)][]byte) {
	for i, k := range blockKinds {
		b[i] = []byte(k)
	}
	return b
}()

// entry is the entry last read, numbered n, of account.
func (br *blockReader) entry(account string, n uint64) LedgerEntry {
	return LedgerEntry{ID: strconv.FormatUint(n, 10), Time: time.Unix(br.sec, br.nsec).UTC(),
		Account: account, KeyID: string(br.strs[0]), Model: string(br.strs[1]), Ref: string(br.strs[2]),
		HoldID: string(br.strs[fieldHoldID]), Kind: string(br.strs[fieldKind]), Note: string(br.strs[5]),
		Amount: br.amount, BalanceAfter: br.after, Charged: br.charged}
}

// decodeLedgerValue calls emit, in order, for each entry numbered from..to of a ledger value
// stored under the key of entry keyN (a block, or one entry), until emit answers false. It
// checks that the numbers are the key's: a block ends at keyN, a one-entry value is keyN.
func decodeLedgerValue(account string, keyN uint64, val []byte, from, to uint64, emit func(LedgerEntry) bool) error {
	if len(val) == 0 || val[0] != ledgerBlockV1 && val[0] != ledgerBlockV2 {
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
