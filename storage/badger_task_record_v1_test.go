package storage

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// gatewayTask is a task as a priced create through the gateway and its watcher's first answer
// leave it (the record of a bench run's store).
func gatewayTask() Task {
	return Task{ID: "cgt-20261127222715-22ine7xz", Kind: KindVideo, Account: "bench", KeyID: "key_bc0bb19702cf",
		Provider: "sim", Upstream: "default", UpstreamAddress: "http://127.0.0.1:19301/api/v3", Model: "bench-video",
		CreatedAt: 1795818435, UpdatedAt: 1795818435, Status: "queued",
		Result: json.RawMessage(`{"content":{},"created_at":1795818435,"error":null,"execution_expires_after":172800,` +
			`"id":"cgt-20261127222715-22ine7xz","model":"bench-video","service_tier":"default","status":"queued","updated_at":1795818435}`),
		RefreshedAt: 1795818440889120387, ExpiresAt: 1796423235, Active: true, HoldID: "hold_0bcced967a2c8b3b612a2c6c",
		HoldAmount: 257400, HoldUsage: "s=5,q=1,r=720p,ra=16:9,a=1", NoLastFrame: true, Version: 2}
}

// v1Records are the records of testdata/task-records-v1.hex, by name.
func v1Records(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open("testdata/task-records-v1.hex")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records := map[string][]byte{}
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		name, record, ok := strings.Cut(lines.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if records[name], err = hex.DecodeString(record); err != nil {
			t.Fatal(err)
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return records
}

// Records that the previous version wrote (taskRecordV1, bytes of its encoder) read as the
// tasks they were written from; written again they are taskRecordV2 records, which leave the id
// out twice and read back the same.
func TestTaskRecordV1Golden(t *testing.T) {
	records := v1Records(t)
	for name, task := range map[string]Task{"full": fullTask(), "gateway": gatewayTask()} {
		v1 := records[name]
		if len(v1) == 0 || v1[0] != taskRecordV1 {
			t.Fatalf("no V1 record %q in testdata", name)
		}
		got, err := decodeTaskRecord(task.ID, v1)
		if err != nil || !reflect.DeepEqual(got, task) {
			t.Fatalf("%s: the V1 record read as %+v, %v; want %+v", name, got, err, task)
		}
		if got, err := decodeTaskRecord("another-id", v1); err != nil || got.ID != task.ID {
			t.Fatalf("%s: a V1 record read under another id: %+v, %v; want its own id", name, got, err)
		}
		v2, err := encodeTaskRecord(&task)
		if err != nil {
			t.Fatal(err)
		}
		// The ID field (its number, length and bytes) and the quoted id in the Result, less the
		// Result's cut offset.
		if saved := len(v1) - len(v2); saved < 2*len(task.ID)+2 {
			t.Errorf("%s: the V2 record is %d bytes, the V1 %d", name, len(v2), len(v1))
		}
		if got, err := decodeTaskRecord(task.ID, v2); err != nil || !reflect.DeepEqual(got, task) {
			t.Fatalf("%s: the V2 record read as %+v, %v", name, got, err)
		}
	}
}

// A store whose task record the previous version wrote serves it as it was, and a change made
// from it is stored as a V2 record that serves the same task with the change.
func TestBadgerReadsV1TaskRecords(t *testing.T) {
	ctx := context.Background()
	task := gatewayTask()
	// The store's clock is the record's: its times are those of a bench run.
	s, err := OpenBadger(t.TempDir(), BadgerOptions{Now: func() time.Time { return time.Unix(task.UpdatedAt, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	created, err := s.CreateTask(ctx, Task{ID: task.ID, Kind: task.Kind, Account: task.Account, Status: "queued",
		CreatedAt: task.CreatedAt, ExpiresAt: task.ExpiresAt, Active: true})
	if err != nil {
		t.Fatal(err)
	}
	v1, old := v1Records(t)["gateway"], task
	if created.Version != 1 || old.Version != 2 {
		t.Fatalf("versions %d and %d", created.Version, old.Version)
	}
	// The previous version's write of the watcher's first answer over the create's record.
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(prefixTask+task.ID), v1) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(ctx, task.ID)
	if err != nil || !reflect.DeepEqual(got, old) {
		t.Fatalf("Task = %+v, %v; want %+v", got, err, old)
	}
	page, err := s.ListTasks(ctx, task.Account, TaskQuery{PageSize: 10})
	if err != nil || len(page.Tasks) != 1 || !reflect.DeepEqual(page.Tasks[0], old) {
		t.Fatalf("ListTasks = %+v, %v", page, err)
	}
	got.Status = "running"
	changed, err := s.ReplaceTask(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	if record := storedTaskRecord(t, s, task.ID); record[0] != taskRecordV2 || len(record) >= len(v1) {
		t.Errorf("the changed record is %d bytes starting %d; the V1 one %d", len(record), record[0], len(v1))
	}
	again, err := s.Task(ctx, task.ID)
	if err != nil || !reflect.DeepEqual(again, changed) || string(again.Result) != string(old.Result) || again.ID != task.ID {
		t.Fatalf("Task after the change = %+v, %v; want %+v", again, err, changed)
	}
}
