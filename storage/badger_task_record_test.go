package storage

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fullTask is a task with every field set.
func fullTask() Task {
	return Task{ID: "cgt-1", Kind: KindVideo, Account: "acme", KeyID: "key_1", Provider: "ark", Upstream: "second",
		UpstreamAddress: "https://ark.example/api/v3", UpstreamID: "op/1", Model: "seedance", CreatedAt: 1_700_000_000,
		UpdatedAt: 1_700_000_100, Status: "running", Result: json.RawMessage(`{"id":"cgt-1","status":"running"}`),
		RefreshedAt: 1_700_000_100_123_456_789, ExpiresAt: 1_700_604_800, FinishedAt: 1_700_000_200, Active: true,
		Finished: true, Cost: -5, Held: 7, HoldID: "hold_1", HoldAmount: 257_400, HoldUsage: "s=5,q=1",
		CallbackURL: "https://cb.example/x", CallbackGone: true, Notified: "succeeded", NoLastFrame: true,
		Request: json.RawMessage(`{"prompt":"a lighthouse"}`), Usage: json.RawMessage(`{"video_tokens":10}`),
		Keep: json.RawMessage(`[1,2]`), Version: 9}
}

// Every field of a Task survives the binary record, alone or with all the others, and the head
// read of it holds the head's fields.
func TestTaskRecordRoundTrip(t *testing.T) {
	full := fullTask()
	tasks := append([]Task{{}, {Version: 1}, {Version: -1}, full}, eachFieldAlone(full)...)
	for _, task := range tasks {
		record, err := encodeTaskRecord(&task)
		if err != nil {
			t.Fatalf("encodeTaskRecord(%+v): %v", task, err)
		}
		if record[0] != taskRecordV2 {
			t.Fatalf("record starts with %d", record[0])
		}
		got, err := decodeTaskRecord(task.ID, record)
		if err != nil || !reflect.DeepEqual(got, task) {
			t.Fatalf("decodeTaskRecord(encodeTaskRecord(%+v)) = %+v, %v", task, got, err)
		}
		head, err := decodeTaskHead(record)
		if want := (taskHead{Kind: task.Kind, Account: task.Account, CreatedAt: task.CreatedAt, Status: task.Status,
			ExpiresAt: task.ExpiresAt, FinishedAt: task.FinishedAt, Finished: task.Finished, Version: task.Version}); err != nil || head != want {
			t.Fatalf("decodeTaskHead(encodeTaskRecord(%+v)) = %+v, %v; want %+v", task, head, err, want)
		}
	}
}

// The binary record is far smaller than the JSON one (the point of it), and JSON values are kept
// compacted as json.Marshal writes them; one that is not valid JSON is json.Marshal's error.
func TestTaskRecordSizeAndJSONValues(t *testing.T) {
	task := fullTask()
	record, err := encodeTaskRecord(&task)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	if len(record) > len(js)*2/3 {
		t.Errorf("binary record %d bytes, JSON %d", len(record), len(js))
	}
	task.Result = json.RawMessage(" { \"a\" : [ 1 , \"<\" ] } ")
	record, err = encodeTaskRecord(&task)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeTaskRecord(task.ID, record)
	if err != nil || string(got.Result) != `{"a":[1,"\u003c"]}` {
		t.Errorf("Result read back as %s, %v", got.Result, err)
	}
	task.Result = json.RawMessage(`{"a":`)
	if _, err := encodeTaskRecord(&task); err == nil {
		t.Error("an invalid Result was encoded")
	}
	if _, jerr := json.Marshal(task); jerr == nil {
		t.Error("json.Marshal took it")
	}
}

// Records in JSON, as earlier versions wrote them, read as they always did.
func TestTaskRecordReadsJSON(t *testing.T) {
	task := fullTask()
	js, err := marshalTask(&task)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeTaskRecord(task.ID, js)
	if err != nil || !reflect.DeepEqual(got, task) {
		t.Fatalf("decodeTaskRecord(JSON) = %+v, %v", got, err)
	}
	head, err := decodeTaskHead(js)
	if err != nil || head.Version != 9 || head.Account != "acme" || !head.Finished {
		t.Fatalf("decodeTaskHead(JSON) = %+v, %v", head, err)
	}
}

// A record cut short, with fields out of order or repeated, or with a field this version does
// not know, is an error, never a panic or a wrong task.
func TestTaskRecordCorrupt(t *testing.T) {
	task := fullTask()
	record, err := encodeTaskRecord(&task)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(record) - 1 {
		if _, err := decodeTaskRecord(task.ID, record[:n]); err == nil && n > 1 {
			// A cut between two fields is a shorter record that decodes; it must not be this one.
			if got, _ := decodeTaskRecord(task.ID, record[:n]); reflect.DeepEqual(got, task) {
				t.Fatalf("a record cut to %d bytes read as the whole task", n)
			}
		}
	}
	for _, bad := range [][]byte{
		{taskRecordV1},                         // no version
		{taskRecordV1, 1, taskFieldKind, 200},  // a length past the end
		{taskRecordV1, 1, taskFieldKind, 0, 1}, // fields out of order
		{taskRecordV1, 1, taskFieldActive, taskFieldActive},
		{taskRecordV1, 1, 0},
		{taskRecordV2},
		{taskRecordV2, 1, taskFieldID, 1, 'a'},             // the key holds the id
		{taskRecordV2, 1, taskFieldResult, 3, 4, '{', '}'}, // a cut past the Result's end
		{taskRecordV2, 1, taskFieldResult, 2, 0x80, '{'},   // a cut that does not decode
		{taskRecordV2, 1, taskFieldKind, 0, taskFieldKind}, // fields repeated
	} {
		if _, err := decodeTaskRecord("cgt-1", bad); !errors.Is(err, errCorruptTaskRecord) {
			t.Errorf("decodeTaskRecord(%v) = %v", bad, err)
		}
	}
	_, err = decodeTaskRecord("cgt-1", []byte{taskRecordV2, 1, taskFields})
	if !errors.Is(err, errCorruptTaskRecord) || !strings.Contains(err.Error(), "later") {
		t.Errorf("a field of a later version: %v", err)
	}
}

// FuzzTaskRecord: any bytes decode to a task or an error, and a task decoded encodes to a record
// that decodes to it again (its JSON values compacted, as the encoding writes them).
func FuzzTaskRecord(f *testing.F) {
	task := fullTask()
	record, err := encodeTaskRecord(&task)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(record)
	f.Add([]byte{taskRecordV1, 1, taskFieldID, 3, 'a', 'b', 'c'})
	f.Add([]byte{taskRecordV2, 1, taskFieldResult, 3, 2, '[', ']'})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || !binaryTaskRecord(b[0]) {
			return // JSON: task_json_test.go
		}
		got, err := decodeTaskRecord("cgt-1", b)
		head, herr := decodeTaskHead(b)
		if (err == nil) != (herr == nil) {
			t.Fatalf("decodeTaskRecord: %v; decodeTaskHead: %v", err, herr)
		}
		if err != nil {
			return
		}
		if head.Version != got.Version || head.Account != got.Account || head.Status != got.Status {
			t.Fatalf("head %+v of task %+v", head, got)
		}
		again, err := encodeTaskRecord(&got)
		if err != nil {
			return // a JSON value that is not valid JSON: json.Marshal's error too
		}
		back, err := decodeTaskRecord(got.ID, again)
		for _, v := range []*json.RawMessage{&got.Result, &got.Request, &got.Usage, &got.Keep} {
			if len(*v) > 0 {
				compact, _ := json.Marshal(*v) // valid: encodeTaskRecord took it
				*v = compact
			}
		}
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("%+v encoded and decoded is %+v, %v", got, back, err)
		}
	})
}

// A store holding task records in JSON (written by an earlier version) reads, lists, searches
// and changes them; a change writes the record in the binary form.
func TestBadgerReadsJSONTaskRecords(t *testing.T) {
	ctx := context.Background()
	s, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().Unix()
	old := Task{ID: "cgt-old", Kind: KindVideo, Account: "acme", KeyID: "key_1", Provider: "ark", Model: "m",
		CreatedAt: now, UpdatedAt: now, Status: "queued", ExpiresAt: now + 3600}
	created := putJSONTaskRecord(t, s, old)
	got, err := s.Task(ctx, old.ID)
	if err != nil || !reflect.DeepEqual(got, created) {
		t.Fatalf("Task = %+v, %v; want %+v", got, err, created)
	}
	page, err := s.ListTasks(ctx, "acme", TaskQuery{PageSize: 10})
	if err != nil || page.Total != 1 || page.Tasks[0].ID != old.ID {
		t.Fatalf("ListTasks = %+v, %v", page, err)
	}
	found, err := s.SearchAllTasks(ctx, TaskSearch{Limit: 10})
	if err != nil || len(found.Tasks) != 1 {
		t.Fatalf("SearchAllTasks = %+v, %v", found, err)
	}
	got.Status = "running"
	changed, err := s.ReplaceTask(ctx, got)
	if err != nil || changed.Version != 2 {
		t.Fatalf("ReplaceTask = %+v, %v", changed, err)
	}
	if record := storedTaskRecord(t, s, old.ID); record[0] != taskRecordV2 {
		t.Errorf("the changed record is %q, not binary", record)
	}
	if got, err := s.Task(ctx, old.ID); err != nil || got.Status != "running" || got.Version != 2 {
		t.Errorf("Task after the change = %+v, %v", got, err)
	}
}

// The binary record against the JSON codec, on the watcher's record of BenchmarkTaskJSON (bytes
// per record reported as record-B):
//
//	go test ./storage/ -run '^$' -bench TaskRecord -benchmem
func BenchmarkTaskRecord(b *testing.B) {
	task := taskJSONSamples()[1]
	task.Result = json.RawMessage(`{"content":{},"created_at":1763800000,"error":null,"execution_expires_after":172800,"id":"cgt-20261122-abcdefgh",` +
		`"model":"seedance-1-0-pro","service_tier":"default","status":"queued","updated_at":1763800000}`)
	task.RefreshedAt = 1763800000123456789
	js, err := marshalTask(&task)
	if err != nil {
		b.Fatal(err)
	}
	record, err := encodeTaskRecord(&task)
	if err != nil {
		b.Fatal(err)
	}
	for _, form := range []struct {
		name   string
		record []byte
		encode func(*Task) ([]byte, error)
	}{{"json", js, marshalTask}, {"binary", record, encodeTaskRecord}} {
		b.Run("encode/"+form.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := form.encode(&task); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(form.record)), "record-B")
		})
		b.Run("decode/"+form.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeTaskRecord(task.ID, form.record); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("head/"+form.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeTaskHead(form.record); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// encodeTaskRecord allocates once for the records of the samples, with the watcher's answer too.
func TestTaskRecordAllocatesOnce(t *testing.T) {
	for _, task := range taskJSONSamples()[1:3] {
		task.Result = json.RawMessage(`{"status":"queued","id":"cgt-1"}`)
		if n := testing.AllocsPerRun(20, func() {
			if _, err := encodeTaskRecord(&task); err != nil {
				t.Fatal(err)
			}
		}); n > 1 {
			t.Errorf("encodeTaskRecord allocates %.0f times", n)
		}
	}
}
