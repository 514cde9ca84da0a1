package storage

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
)

// The reading of the binary task records that badger_task_record.go lays out.

// decodeTaskRecord reads the record of the task id in any form (JSON, taskRecordV1 or V2).
func decodeTaskRecord(id string, b []byte) (Task, error) {
	if len(b) > 0 && !binaryTaskRecord(b[0]) {
		return unmarshalTask(b)
	}
	var t Task
	r := taskRecordReader{b: b, id: id}
	if !r.read(&t, true) {
		return Task{}, r.err()
	}
	return t, nil
}

// binaryTaskRecord reports whether a record starting with the byte first is in a binary form.
func binaryTaskRecord(first byte) bool {
	return first == taskRecordV1 || first == taskRecordV2
}

// decodeTaskHead reads the head of a task record in any form, copying no other field.
func decodeTaskHead(b []byte) (taskHead, error) {
	if len(b) > 0 && !binaryTaskRecord(b[0]) {
		return unmarshalTaskHead(b)
	}
	var t Task
	r := taskRecordReader{b: b}
	if !r.read(&t, false) {
		return taskHead{}, r.err()
	}
	return taskHead{Kind: t.Kind, Account: t.Account, CreatedAt: t.CreatedAt, Status: t.Status,
		ExpiresAt: t.ExpiresAt, FinishedAt: t.FinishedAt, Finished: t.Finished, Effects: t.Effects, Version: t.Version}, nil
}

// taskRecordReader reads a binary task record.
type taskRecordReader struct {
	b []byte
	i int
	// id is the task's id, which a taskRecordV2 record leaves out.
	id string
	v2 bool
	// unknown is a field number this version does not know, if read fails on one.
	unknown int
	// strs are the string fields read, copied out of b once the whole record is read.
	strs  [17]taskString
	nstrs int
}

// read decodes the record into t: every field with full, otherwise only taskHead's (the strings
// Kind, Account and Status; the integers and booleans cost no copy).
func (r *taskRecordReader) read(t *Task, full bool) bool {
	if len(r.b) < 2 || !binaryTaskRecord(r.b[0]) {
		return false
	}
	r.v2, r.i = r.b[0] == taskRecordV2, 1
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
	if r.v2 {
		t.ID = r.id
	}
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
		taskFieldCost, taskFieldHeld, taskFieldHoldAmount, taskFieldEffects:
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
		at := 0
		if r.v2 && n == taskFieldResult {
			cut, size := binary.Uvarint(r.b[start:end])
			if size <= 0 || cut > uint64(end-start-size)+1 {
				return false
			}
			start += size
			at = int(cut)
		}
		if full {
			*t.jsonField(n) = uncutQuoted(r.b[start:end], r.id, at)
		}
	case taskFieldID:
		if r.v2 {
			return false // left out: the key holds it
		}
		fallthrough
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
	case taskFieldHoldPrice:
		return &t.HoldPrice
	case taskFieldEndpoint:
		return &t.Endpoint
	case taskFieldIdempotencyKey:
		return &t.IdempotencyKey
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
	case taskFieldEffects:
		return &t.Effects
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

// uncutQuoted is value with s, quoted, put back at one less than at (0: value itself).
func uncutQuoted(value []byte, s string, at int) json.RawMessage {
	if at == 0 {
		return append(json.RawMessage(nil), value...)
	}
	out := make(json.RawMessage, 0, len(value)+len(s)+2)
	out = append(append(append(out, value[:at-1]...), '"'), s...)
	return append(append(out, '"'), value[at-1:]...)
}
