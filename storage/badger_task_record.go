package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Badger keeps a task's record in a compact binary form: a create writes one and the watcher's
// first read of the task writes it again, and in JSON these were two thirds of the bytes Badger
// copies into its write-ahead log and memtable for a task create (its keys alone about 250 of a
// record's 450 to 750 bytes), bytes that every disk sync then writes back page by page. A record
// that starts with '{' is JSON, as earlier versions wrote it, and is still read; it is written
// again in the binary form at its next change. Redis keeps JSON (redis_tasks.go).
//
// Layout: taskRecordV1; the Version as a uvarint; then each field that is not empty (not zero,
// not false, not ""), in the order of taskField's numbers, as its number (one byte) and its
// value: a string or a JSON value (Result, Request, Usage, Keep: compacted, as json.Marshal
// writes a json.RawMessage) as a uvarint length and its bytes, an integer as a zig-zag varint, a
// boolean as nothing (its number says true). A number this version does not know is an error:
// the record was written by a later version. Strings are kept byte for byte, where JSON replaced
// invalid UTF-8 with U+FFFD.
const taskRecordV1 byte = 1

// The numbers of a task record's fields.
const (
	taskFieldID = iota + 1
	taskFieldKind
	taskFieldAccount
	taskFieldKeyID
	taskFieldProvider
	taskFieldUpstream
	taskFieldUpstreamAddress
	taskFieldUpstreamID
	taskFieldModel
	taskFieldCreatedAt
	taskFieldUpdatedAt
	taskFieldStatus
	taskFieldResult
	taskFieldRefreshedAt
	taskFieldExpiresAt
	taskFieldFinishedAt
	taskFieldActive
	taskFieldFinished
	taskFieldCost
	taskFieldHeld
	taskFieldHoldID
	taskFieldHoldAmount
	taskFieldHoldUsage
	taskFieldCallbackURL
	taskFieldCallbackGone
	taskFieldNotified
	taskFieldNoLastFrame
	taskFieldRequest
	taskFieldUsage
	taskFieldKeep
	taskFields // one more than the last number
)

var errCorruptTaskRecord = errors.New("corrupt task record")

// encodeTaskRecord is the record of t as Badger stores it. It fails, as json.Marshal does, on a
// Result, Request, Usage or Keep that is not one valid JSON value.
func encodeTaskRecord(t *Task) ([]byte, error) {
	w := taskRecordWriter{b: make([]byte, 0, taskRecordSize(t))}
	w.b = binary.AppendUvarint(append(w.b, taskRecordV1), uint64(t.Version))
	w.str(taskFieldID, t.ID)
	w.str(taskFieldKind, t.Kind)
	w.str(taskFieldAccount, t.Account)
	w.str(taskFieldKeyID, t.KeyID)
	w.str(taskFieldProvider, t.Provider)
	w.str(taskFieldUpstream, t.Upstream)
	w.str(taskFieldUpstreamAddress, t.UpstreamAddress)
	w.str(taskFieldUpstreamID, t.UpstreamID)
	w.str(taskFieldModel, t.Model)
	w.int(taskFieldCreatedAt, t.CreatedAt)
	w.int(taskFieldUpdatedAt, t.UpdatedAt)
	w.str(taskFieldStatus, t.Status)
	w.json(taskFieldResult, t.Result)
	w.int(taskFieldRefreshedAt, t.RefreshedAt)
	w.int(taskFieldExpiresAt, t.ExpiresAt)
	w.int(taskFieldFinishedAt, t.FinishedAt)
	w.flag(taskFieldActive, t.Active)
	w.flag(taskFieldFinished, t.Finished)
	w.int(taskFieldCost, t.Cost)
	w.int(taskFieldHeld, t.Held)
	w.str(taskFieldHoldID, t.HoldID)
	w.int(taskFieldHoldAmount, t.HoldAmount)
	w.str(taskFieldHoldUsage, t.HoldUsage)
	w.str(taskFieldCallbackURL, t.CallbackURL)
	w.flag(taskFieldCallbackGone, t.CallbackGone)
	w.str(taskFieldNotified, t.Notified)
	w.flag(taskFieldNoLastFrame, t.NoLastFrame)
	w.json(taskFieldRequest, t.Request)
	w.json(taskFieldUsage, t.Usage)
	w.json(taskFieldKeep, t.Keep)
	return w.b, w.err
}

// taskRecordSize is about the length of t's record: enough, unless its JSON values grow when
// compacted (HTML characters escaped).
func taskRecordSize(t *Task) int {
	return 11 + 6*14 + 11*8 + 4 + 6*4 + len(t.ID) + len(t.Kind) + len(t.Account) + len(t.KeyID) + len(t.Provider) +
		len(t.Upstream) + len(t.UpstreamAddress) + len(t.UpstreamID) + len(t.Model) + len(t.Status) + len(t.HoldID) +
		len(t.HoldUsage) + len(t.CallbackURL) + len(t.Notified) + len(t.Result) + len(t.Request) + len(t.Usage) + len(t.Keep)
}

// taskRecordWriter appends the fields of a binary task record (each only when not empty).
type taskRecordWriter struct {
	b   []byte
	err error
}

func (w *taskRecordWriter) str(n byte, s string) {
	if s != "" {
		w.b = append(binary.AppendUvarint(append(w.b, n), uint64(len(s))), s...)
	}
}

func (w *taskRecordWriter) int(n byte, v int64) {
	if v != 0 {
		w.b = binary.AppendVarint(append(w.b, n), v)
	}
}

func (w *taskRecordWriter) flag(n byte, v bool) {
	if v {
		w.b = append(w.b, n)
	}
}

// json appends field n holding the JSON value v, compacted as json.Marshal writes a
// json.RawMessage.
func (w *taskRecordWriter) json(n byte, v json.RawMessage) {
	if len(v) == 0 || w.err != nil {
		return
	}
	start := len(w.b)
	compact, ok := appendCompactValue(append(w.b, n), v)
	if !ok {
		// Its error, or a value nested deeper than appendCompactValue follows.
		if compact, w.err = json.Marshal(v); w.err == nil {
			w.b = append(binary.AppendUvarint(append(w.b[:start], n), uint64(len(compact))), compact...)
		}
		return
	}
	// The value is at start+1: put its length before it.
	var size [binary.MaxVarintLen64]byte
	w.b = slices.Insert(compact, start+1, binary.AppendUvarint(size[:0], uint64(len(compact)-start-1))...)
}

// decodeTaskRecord reads a task record in either form (see taskRecordV1).
func decodeTaskRecord(b []byte) (Task, error) {
	if len(b) > 0 && b[0] != taskRecordV1 {
		return unmarshalTask(b)
	}
	var t Task
	r := taskRecordReader{b: b}
	if !r.read(&t, true) {
		return Task{}, r.err()
	}
	return t, nil
}

// decodeTaskHead reads the head of a task record in either form, copying no other field.
func decodeTaskHead(b []byte) (taskHead, error) {
	if len(b) > 0 && b[0] != taskRecordV1 {
		return unmarshalTaskHead(b)
	}
	var t Task
	r := taskRecordReader{b: b}
	if !r.read(&t, false) {
		return taskHead{}, r.err()
	}
	return taskHead{Kind: t.Kind, Account: t.Account, CreatedAt: t.CreatedAt, Status: t.Status,
		ExpiresAt: t.ExpiresAt, FinishedAt: t.FinishedAt, Finished: t.Finished, Version: t.Version}, nil
}

// taskRecordReader reads a binary task record.
type taskRecordReader struct {
	b []byte
	i int
	// unknown is a field number this version does not know, if read fails on one.
	unknown int
	// strs are the string fields read, copied out of b once the whole record is read.
	strs  [16]taskString
	nstrs int
}

// read decodes the record into t: every field with full, otherwise only taskHead's (the strings
// Kind, Account and Status; the integers and booleans cost no copy).
func (r *taskRecordReader) read(t *Task, full bool) bool {
	if len(r.b) < 2 || r.b[0] != taskRecordV1 {
		return false
	}
	r.i = 1
	v, ok := r.uvarint()
	if !ok {
		return false
	}
	t.Version = int64(v) // as encodeTaskRecord wrote it: uint64(Version)
	last := 0
	for r.i < len(r.b) {
		n := int(r.b[r.i])
		r.i++
		if n <= last || n >= taskFields {
			if n >= taskFields {
				r.unknown = n
			}
			return false
		}
		last = n
		if !r.field(t, n, full) {
			return false
		}
	}
	r.copyStrings(t)
	return true
}

// field reads the value of field n into t.
func (r *taskRecordReader) field(t *Task, n int, full bool) bool {
	switch n {
	case taskFieldActive:
		t.Active = true
	case taskFieldFinished:
		t.Finished = true
	case taskFieldCallbackGone:
		t.CallbackGone = true
	case taskFieldNoLastFrame:
		t.NoLastFrame = true
	case taskFieldCreatedAt, taskFieldUpdatedAt, taskFieldRefreshedAt, taskFieldExpiresAt, taskFieldFinishedAt,
		taskFieldCost, taskFieldHeld, taskFieldHoldAmount:
		v, size := binary.Varint(r.b[r.i:])
		if size <= 0 {
			return false
		}
		r.i += size
		*t.intField(n) = v
	case taskFieldResult, taskFieldRequest, taskFieldUsage, taskFieldKeep:
		start, end, ok := r.bytes()
		if !ok {
			return false
		}
		if full {
			*t.jsonField(n) = append(json.RawMessage(nil), r.b[start:end]...)
		}
	default: // a string
		start, end, ok := r.bytes()
		if !ok {
			return false
		}
		if full || n == taskFieldKind || n == taskFieldAccount || n == taskFieldStatus {
			r.strs[r.nstrs] = taskString{n, start, end}
			r.nstrs++
		}
	}
	return true
}

// bytes reads a length and skips that many bytes, answering where they are.
func (r *taskRecordReader) bytes() (start, end int, ok bool) {
	size, ok := r.uvarint()
	if !ok || size > uint64(len(r.b)-r.i) {
		return 0, 0, false
	}
	start = r.i
	r.i += int(size)
	return start, r.i, true
}

func (r *taskRecordReader) uvarint() (uint64, bool) {
	v, size := binary.Uvarint(r.b[r.i:])
	if size <= 0 {
		return 0, false
	}
	r.i += size
	return v, true
}

// copyStrings sets the string fields read, from one copy of them all (Kind and Status of the
// usual values need none).
func (r *taskRecordReader) copyStrings(t *Task) {
	size := 0
	for i, s := range r.strs[:r.nstrs] {
		if common, ok := internTaskString(r.b[s.start:s.end]); ok {
			*t.recordString(s.field) = common
			r.strs[i].field = 0 // set
			continue
		}
		size += s.end - s.start
	}
	var all strings.Builder
	all.Grow(size)
	for _, s := range r.strs[:r.nstrs] {
		if s.field != 0 {
			all.Write(r.b[s.start:s.end])
		}
	}
	str, at := all.String(), 0
	for _, s := range r.strs[:r.nstrs] {
		if s.field != 0 {
			*t.recordString(s.field) = str[at : at+s.end-s.start]
			at += s.end - s.start
		}
	}
}

// err is the error of a read that failed.
func (r *taskRecordReader) err() error {
	if r.unknown != 0 {
		return fmt.Errorf("%w: field %d, unknown to this version (written by a later one?)", errCorruptTaskRecord, r.unknown)
	}
	return errCorruptTaskRecord
}

// recordString is the string field numbered n in a binary record.
func (t *Task) recordString(n int) *string {
	switch n {
	case taskFieldID:
		return &t.ID
	case taskFieldKind:
		return &t.Kind
	case taskFieldAccount:
		return &t.Account
	case taskFieldKeyID:
		return &t.KeyID
	case taskFieldProvider:
		return &t.Provider
	case taskFieldUpstream:
		return &t.Upstream
	case taskFieldUpstreamAddress:
		return &t.UpstreamAddress
	case taskFieldUpstreamID:
		return &t.UpstreamID
	case taskFieldModel:
		return &t.Model
	case taskFieldStatus:
		return &t.Status
	case taskFieldHoldID:
		return &t.HoldID
	case taskFieldHoldUsage:
		return &t.HoldUsage
	case taskFieldCallbackURL:
		return &t.CallbackURL
	}
	return &t.Notified // taskFieldNotified: field notes string fields only
}

// intField is the integer field numbered n in a binary record.
func (t *Task) intField(n int) *int64 {
	switch n {
	case taskFieldCreatedAt:
		return &t.CreatedAt
	case taskFieldUpdatedAt:
		return &t.UpdatedAt
	case taskFieldRefreshedAt:
		return &t.RefreshedAt
	case taskFieldExpiresAt:
		return &t.ExpiresAt
	case taskFieldFinishedAt:
		return &t.FinishedAt
	case taskFieldCost:
		return &t.Cost
	case taskFieldHeld:
		return &t.Held
	}
	return &t.HoldAmount // taskFieldHoldAmount: field calls it for these numbers only
}

// jsonField is the JSON value field numbered n in a binary record.
func (t *Task) jsonField(n int) *json.RawMessage {
	switch n {
	case taskFieldResult:
		return &t.Result
	case taskFieldRequest:
		return &t.Request
	case taskFieldUsage:
		return &t.Usage
	}
	return &t.Keep // taskFieldKeep: field calls it for these numbers only
}
