package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
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

// taskRecordV2 starts the form this version writes: taskRecordV1's, less the bytes that repeat
// the task's id. The ID field is left out (the record's key, t/<id>, holds it: a record is read
// with its id, decodeTaskRecord), and the Result field's bytes start with a uvarint: 0, or one
// more than the offset in the compacted Result at which the id, quoted (`"<id>"`), was cut out
// (an upstream's answer names the task: the watcher's first write of a task carries it). Records
// of the first form are still read; earlier versions cannot read this one (they report it
// corrupt, not misread).
const taskRecordV2 byte = 2

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
	taskFieldHoldPrice
	taskFieldEndpoint
	taskFieldIdempotencyKey
	taskFieldEffects
	taskFields // one more than the last number
)

var errCorruptTaskRecord = errors.New("corrupt task record")

// encodeTaskRecord is the record of t as Badger stores it under t's id (taskRecordV2). It fails,
// as json.Marshal does, on a Result, Request, Usage or Keep that is not one valid JSON value.
func encodeTaskRecord(t *Task) ([]byte, error) {
	w := taskRecordWriter{b: make([]byte, 0, taskRecordSize(t))}
	w.b = binary.AppendUvarint(append(w.b, taskRecordV2), uint64(t.Version))
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
	w.json(taskFieldResult, t.Result, t.ID)
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
	w.json(taskFieldRequest, t.Request, "")
	w.json(taskFieldUsage, t.Usage, "")
	w.json(taskFieldKeep, t.Keep, "")
	w.str(taskFieldHoldPrice, t.HoldPrice)
	w.str(taskFieldEndpoint, t.Endpoint)
	w.str(taskFieldIdempotencyKey, t.IdempotencyKey)
	w.int(taskFieldEffects, t.Effects)
	return w.b, w.err
}

// taskRecordSize is about the length of t's record: enough, unless its JSON values grow when
// compacted (HTML characters escaped).
func taskRecordSize(t *Task) int {
	return 12 + 7*14 + 11*8 + 4 + 6*4 + binary.MaxVarintLen64 + len(t.Kind) + len(t.Account) + len(t.KeyID) + len(t.Provider) +
		len(t.Upstream) + len(t.UpstreamAddress) + len(t.UpstreamID) + len(t.Model) + len(t.Status) + len(t.HoldID) +
		len(t.HoldUsage) + len(t.CallbackURL) + len(t.Notified) + len(t.Result) + len(t.Request) + len(t.Usage) + len(t.Keep) + len(t.HoldPrice) + len(t.Endpoint) + len(t.IdempotencyKey)
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
// json.RawMessage. The Result's bytes start with where the task id, quoted, was cut out of it
// (see taskRecordV2).
func (w *taskRecordWriter) json(n byte, v json.RawMessage, id string) {
	if len(v) == 0 || w.err != nil {
		return
	}
	start := len(w.b)
	compact, ok := appendCompactValue(append(w.b, n), v)
	if !ok {
		// Its error, or a value nested deeper than appendCompactValue follows.
		var marshalled []byte
		if marshalled, w.err = json.Marshal(v); w.err != nil {
			return
		}
		compact = append(append(w.b[:start], n), marshalled...)
	}
	// The value is at start+1: put its length (and the cut) before it.
	var head [2 * binary.MaxVarintLen64]byte
	cutAt := head[binary.MaxVarintLen64:binary.MaxVarintLen64]
	if n == taskFieldResult {
		value, at := cutQuoted(compact[start+1:], id)
		compact = compact[:start+1+len(value)]
		cutAt = binary.AppendUvarint(cutAt, uint64(at))
	}
	size := binary.AppendUvarint(head[:0], uint64(len(cutAt)+len(compact)-start-1))
	w.b = slices.Insert(compact, start+1, append(size, cutAt...)...)
}

// cutQuoted removes from value, in place, the first occurrence of s quoted (`"<s>"`), and answers
// the value left and one more than the occurrence's offset (0: none, or s is empty).
func cutQuoted(value []byte, s string) ([]byte, int) {
	quoted := []byte(s)
	for from := 0; s != ""; {
		i := bytes.Index(value[from:], quoted)
		if i < 0 {
			return value, 0
		}
		i += from
		if i > 0 && value[i-1] == '"' && i+len(s) < len(value) && value[i+len(s)] == '"' {
			return append(value[:i-1], value[i+len(s)+1:]...), i
		}
		from = i + 1
	}
	return value, 0
}
