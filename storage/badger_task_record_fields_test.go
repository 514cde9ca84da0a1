package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// everyFieldTask is a Task with every field set to a value of its own, by reflection: a field
// added to Task later is set here too, so a codec that leaves it out fails the tests below. A
// field of a type this does not know how to fill fails the test that asks for it.
func everyFieldTask(t *testing.T) Task {
	t.Helper()
	var task Task
	v := reflect.ValueOf(&task).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case f.Type() == reflect.TypeFor[json.RawMessage]():
			f.SetBytes([]byte(`{"field":"` + name + `","n":` + strconv.Itoa(i) + `}`))
		case f.Kind() == reflect.String:
			f.SetString(name + "-é-" + strconv.Itoa(i)) // not ASCII only
		case f.Kind() == reflect.Int64:
			f.SetInt(int64(i+1) * 1_000_000_007) // past 32 bits, each its own
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("Task.%s is a %s: fill it here, and give it a field number in badger_task_record.go", name, f.Type())
		}
	}
	// Kind and Status drive the head and Unfinished: keep them domain values.
	task.Kind, task.Status = KindVideo, "running"
	return task
}

// eachFieldAlone is a task per field of full, with that field of full's alone.
func eachFieldAlone(full Task) []Task {
	v := reflect.ValueOf(full)
	tasks := make([]Task, v.NumField())
	for i := range tasks {
		reflect.ValueOf(&tasks[i]).Elem().Field(i).Set(v.Field(i))
	}
	return tasks
}

// Every field of a Task, set by reflection, survives the binary record, each alone and all
// together; the JSON record of earlier versions reads the same; the head holds the head's fields.
func TestTaskRecordKeepsEveryField(t *testing.T) {
	full := everyFieldTask(t)
	v := reflect.ValueOf(full)
	for _, task := range append(eachFieldAlone(full), full) {
		record, err := encodeTaskRecord(&task)
		if err != nil {
			t.Fatalf("encodeTaskRecord: %v", err)
		}
		got, err := decodeTaskRecord(task.ID, record)
		if err != nil {
			t.Fatalf("decodeTaskRecord: %v", err)
		}
		for i := range v.NumField() {
			if want, have := reflect.ValueOf(task).Field(i).Interface(), reflect.ValueOf(got).Field(i).Interface(); !reflect.DeepEqual(want, have) {
				t.Errorf("Task.%s through the binary record: %v, want %v", v.Type().Field(i).Name, have, want)
			}
		}
		js, err := marshalTask(&task)
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := decodeTaskRecord(task.ID, js)
		if err != nil || !reflect.DeepEqual(fromJSON, task) {
			t.Errorf("the JSON record read as %+v, %v; want %+v", fromJSON, err, task)
		}
		for _, r := range [][]byte{record, js} {
			head, err := decodeTaskHead(r)
			if want := (taskHead{Kind: task.Kind, Account: task.Account, CreatedAt: task.CreatedAt, Status: task.Status,
				ExpiresAt: task.ExpiresAt, FinishedAt: task.FinishedAt, Finished: task.Finished, Effects: task.Effects, Version: task.Version}); err != nil || head != want {
				t.Errorf("decodeTaskHead = %+v, %v; want %+v", head, err, want)
			}
		}
	}
}

// putJSONTaskRecord creates task in s and writes its record over in JSON, as an earlier version
// wrote it; it returns the task as created.
func putJSONTaskRecord(t *testing.T, s *Badger, task Task) Task {
	t.Helper()
	created, err := s.CreateTask(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	js, err := marshalTask(&created)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(prefixTask+task.ID), js) }); err != nil {
		t.Fatal(err)
	}
	return created
}

// storedTaskRecord is the record of task id as Badger holds it.
func storedTaskRecord(t *testing.T, s *Badger, id string) []byte {
	t.Helper()
	var record []byte
	if err := s.db.View(func(txn *badger.Txn) error {
		var err error
		record, err = txnGet(txn, prefixTask+id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return record
}

// A JSON record of an earlier version with every field set is read by Badger as it was, and
// written again at its next change in the binary form with every field kept.
func TestBadgerRewritesEveryFieldOfAJSONRecord(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, now := context.Background(), time.Now().Unix()
	task := everyFieldTask(t)
	task.Finished, task.FinishedAt = false, 0 // unfinished, so that a change may follow
	task.CreatedAt, task.UpdatedAt, task.ExpiresAt = now, now, now+3600
	created := putJSONTaskRecord(t, s, task)
	got, err := s.Task(ctx, task.ID)
	if err != nil || !reflect.DeepEqual(got, created) {
		t.Fatalf("the JSON record read as %+v, %v; want %+v", got, err, created)
	}
	got.Status = "succeeded"
	changed, err := s.ReplaceTask(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	if record := storedTaskRecord(t, s, task.ID); record[0] != taskRecordV2 {
		t.Fatalf("the changed record is not binary: %q", record)
	}
	want := got
	want.Version, want.FinishedAt = created.Version+1, changed.FinishedAt
	if reread, err := s.Task(ctx, task.ID); err != nil || !reflect.DeepEqual(reread, want) || changed.FinishedAt == 0 {
		t.Fatalf("the rewritten record read as %+v, %v; want %+v (every field kept, finished now)", reread, err, want)
	}
}

// A record in the first binary form (taskRecordV1, which keeps the id) with every string field
// set, the id's and the idempotency key's among them, reads whole: the reader notes 17 strings.
func TestTaskRecordV1WithEveryString(t *testing.T) {
	full := everyFieldTask(t)
	full.Result = nil // a v2 Result starts with the offset of a cut id, a v1 one does not
	v2, err := encodeTaskRecord(&full)
	if err != nil {
		t.Fatal(err)
	}
	// v1 is v2 with its form byte, and the id as field 1 after the version.
	_, size := binary.Uvarint(v2[1:])
	v1 := append([]byte{taskRecordV1}, v2[1:1+size]...)
	v1 = append(binary.AppendUvarint(append(v1, taskFieldID), uint64(len(full.ID))), full.ID...)
	v1 = append(v1, v2[1+size:]...)
	got, err := decodeTaskRecord("another-id", v1)
	if err != nil || got.ID != full.ID || got.IdempotencyKey != full.IdempotencyKey || got.Endpoint != full.Endpoint {
		t.Fatalf("decodeTaskRecord = id %q, key %q, endpoint %q, %v", got.ID, got.IdempotencyKey, got.Endpoint, err)
	}
}
