package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// taskJSONSamples are records as the gateway writes them, and records with everything that
// takes marshalTask off its plain path.
func taskJSONSamples() []Task {
	return []Task{
		{},
		{ID: "cgt-20261122-abcdefgh", Kind: KindVideo, Account: "acme", KeyID: "key_1", Provider: "ark",
			Model: "seedance-1-0-pro", CreatedAt: 1763800000, UpdatedAt: 1763800000, Status: "queued",
			ExpiresAt: 1764404800, Active: true, Cost: 108900, Held: 108900, Version: 1,
			HoldID: "h_0123456789abcdef", HoldAmount: 257400, HoldUsage: "s=5,r=720p,ra=16:9,a=1,q=1"},
		{ID: "cgt-2", Kind: KindVideo, Account: "acme", KeyID: "key_1", Provider: "ark", Upstream: "second",
			UpstreamAddress: "https://ark.example/api/v3", Model: "m", CreatedAt: 1, UpdatedAt: 2, Status: "succeeded",
			Result:      json.RawMessage(`{"id":"cgt-2","status":"succeeded","content":{"video_url":"https://s3.example/v.mp4?X-Amz-Signature=ab&X-Amz-Date=1"},"usage":{"total_tokens":108900},"error":null}`),
			RefreshedAt: 1763800000123456789, ExpiresAt: 3, FinishedAt: 2, Finished: true, Cost: -1, Held: math.MaxInt64,
			CallbackURL: "https://hooks.example/cb?a=1&b=<2>", CallbackGone: true, Notified: "running", Version: math.MinInt64},
		{ID: "quo\"te\\back\x00\x01\x1f\x7f\b\f\n\r\t", Kind: "ünïcödé", Account: "line\u2028para\u2029", Model: "bad\xff\xfeutf8\xe2\x80",
			Status: "<>&", Result: json.RawMessage(" [ 1 , -0.5e+3, true, false, null, \"<\u2028&>\", {} , [ ] ]\n")},
		{ID: "deep", Result: json.RawMessage(strings.Repeat("[", 100) + strings.Repeat("]", 100))},
		{ID: "string result", Result: json.RawMessage(`"\u00e9\"\\\/\b\f\n\r\t"`)},
		{ID: "null result", Result: json.RawMessage(`null`)},
		{ID: "number result", Result: json.RawMessage(`12`)},
	}
}

// marshalTask writes the bytes json.Marshal writes, and unmarshalTask reads them back as
// json.Unmarshal does.
func TestMarshalTaskIsJSONMarshal(t *testing.T) {
	for _, task := range taskJSONSamples() {
		checkMarshalTask(t, task)
	}
}

// Every field of Task is written and read by the codec: a field added to Task without a line in
// marshalTask and taskParser.field fails here.
func TestTaskCodecCoversEveryField(t *testing.T) {
	var task Task
	v := reflect.ValueOf(&task).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("plain-%d", i))
		case reflect.Int64:
			f.SetInt(int64(1000 + i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.SetBytes([]byte(fmt.Sprintf(`{"n":%d}`, i)))
		default:
			t.Fatalf("Task.%s has a kind (%s) that the codec does not write", v.Type().Field(i).Name, f.Kind())
		}
	}
	checkMarshalTask(t, task)
	b, err := marshalTask(&task)
	if err != nil {
		t.Fatal(err)
	}
	var got Task
	if p := (taskParser{b: b, full: true}); !p.parse(&got) {
		t.Fatalf("taskParser does not read %s", b)
	} else {
		p.copyStrings(&got)
	}
	if !reflect.DeepEqual(got, task) {
		t.Fatalf("taskParser read %+v from %s, want %+v", got, b, task)
	}
}

// A Result that is not one valid JSON value fails as json.Marshal fails.
func TestMarshalTaskInvalidResult(t *testing.T) {
	for _, r := range []string{`{`, `{"a":}`, `[1,]`, `01`, `1.`, `-`, `"\x"`, "\"\x01\"", `1 2`, `tru`, `nul`, `{"a" 1}`, `{1:2}`, `"\u12"`, ` `} {
		task := Task{ID: "x", Result: json.RawMessage(r)}
		_, wantErr := json.Marshal(&task)
		if wantErr == nil {
			t.Fatalf("json.Marshal accepts result %q", r)
		}
		if got, err := marshalTask(&task); err == nil || err.Error() != wantErr.Error() {
			t.Errorf("marshalTask with result %q = %s, %v; want %v", r, got, err, wantErr)
		}
	}
}

func checkMarshalTask(t *testing.T, task Task) {
	t.Helper()
	want, wantErr := json.Marshal(&task)
	got, err := marshalTask(&task)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() || !bytes.Equal(got, want) {
		t.Fatalf("marshalTask(%+v) = %s, %v; json.Marshal: %s, %v", task, got, err, want, wantErr)
	}
	if err == nil {
		checkUnmarshalTask(t, got)
	}
}

// The records that older versions wrote, and any other bytes, decode as json.Unmarshal decodes
// them: other key order or case, unknown and repeated keys, whitespace, escapes, null, numbers
// that are not integers, and invalid JSON.
func TestUnmarshalTaskIsJSONUnmarshal(t *testing.T) {
	for _, in := range []string{
		`{}`, `{"id":"a"}`, `{"version":3,"id":"a","kind":"image","status":"failed","finished":true}`,
		`{"ID":"a","Kind":"video"}`, `{"id":"a","unknown":1}`, `{"id":"a","id":"b"}`, ` {"id":"a"} `, `{"id" : "a"}`,
		`{"id":"a\u0026b\"c"}`, `{"id":"a\/b"}`, `{"i\u0064":"a"}`, `{"id":null,"active":null,"cost":null}`, `{"result":null}`,
		`{"result":{"a" : [1, 2]}}`, `{"result":"x"}`, `{"result":[]}`, `{"cost":1.0}`, `{"cost":1e3}`, `{"cost":-0}`,
		`{"cost":01}`, `{"cost":9223372036854775807}`, `{"cost":9223372036854775808}`, `{"cost":-9223372036854775808}`,
		`{"cost":-9223372036854775809}`, `{"cost":12345678901234567890}`, `{"cost":"1"}`, `{"active":1}`, `{"id":1}`,
		`{"active":tru}`, `{"active":true,}`, `{"id":"a"}x`, `{"id":"a"}{`, `{"id":"a"{"kind":"video"}`, `{"id":"a",`,
		`{"id":"a`, `{`, ``, `null`, `[]`, `"x"`, `{"id":"bad` + "\xff" + `"}`, `{"id":"ctl` + "\x01" + `"}`,
		`{"id":"ünï"}`, `{"id":"\ud800"}`, `{"result":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
		`{"result":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, `{"result":{"a":1,"a":2}}`,
		`{"kind":"vid\u0065o","account":"a\"b","status":"queued","status":"failed"}`, `{"kind":"video","account":"acme","id":"\x"}`,
		`{"version":2,"kind":"video","account":"acme","created_at":5,"status":"running","expires_at":9,"finished_at":7,"finished":false}`,
		`{"created_at":1,"updated_at":2,"refreshed_at":3,"expires_at":4,"finished_at":5,"held":6,"callback_gone":false}`,
	} {
		checkUnmarshalTask(t, []byte(in))
	}
}

func checkUnmarshalTask(t *testing.T, b []byte) {
	t.Helper()
	var want Task
	wantErr := json.Unmarshal(b, &want)
	got, err := unmarshalTask(b)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("unmarshalTask(%q) = %+v, %v; json.Unmarshal: %+v, %v", b, got, err, want, wantErr)
	}
	var wantHead taskHead
	wantErr = json.Unmarshal(b, &wantHead)
	head, err := unmarshalTaskHead(b)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || head != wantHead {
		t.Fatalf("unmarshalTaskHead(%q) = %+v, %v; json.Unmarshal: %+v, %v", b, head, err, wantHead, wantErr)
	}
}

// The common records take the reflection-free path: a record marshalTask wrote is decoded
// without json.Unmarshal.
func TestUnmarshalTaskFastPath(t *testing.T) {
	for _, task := range taskJSONSamples() {
		b, err := marshalTask(&task)
		if err != nil {
			t.Fatal(err)
		}
		var got Task
		if p := (taskParser{b: b, full: true}); !p.parse(&got) {
			if bytes.Contains(b, []byte(`"result":null`)) || bytes.Contains(b, []byte(strings.Repeat("[", maxFastJSONDepth+1))) {
				continue // left to json.Unmarshal
			}
			t.Errorf("the record %s is not read by taskParser", b)
		}
	}
}

func FuzzMarshalTask(f *testing.F) {
	for _, task := range taskJSONSamples() {
		f.Add(task.ID, task.Account, task.CallbackURL, []byte(task.Result), task.CreatedAt, task.RefreshedAt, task.Finished)
	}
	f.Fuzz(func(t *testing.T, id, account, callback string, result []byte, created, refreshed int64, finished bool) {
		checkMarshalTask(t, Task{ID: id, Kind: KindVideo, Account: account, Status: "running", CallbackURL: callback,
			Result: result, CreatedAt: created, RefreshedAt: refreshed, Finished: finished, Active: !finished, Version: created ^ refreshed})
	})
}

func FuzzUnmarshalTask(f *testing.F) {
	for _, task := range taskJSONSamples() {
		b, err := json.Marshal(task)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"id":"a","id":"b","ID":"c","result":null,"cost":1.5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkUnmarshalTask(t, b)
	})
}

// The codec against encoding/json, on a watcher's record with its answer:
//
//	go test ./storage/ -run '^$' -bench TaskJSON -benchmem
func BenchmarkTaskJSON(b *testing.B) {
	task := taskJSONSamples()[1]
	task.Result = json.RawMessage(`{"content":{},"created_at":1763800000,"error":null,"execution_expires_after":172800,"id":"cgt-20261122-abcdefgh",` +
		`"model":"seedance-1-0-pro","service_tier":"default","status":"queued","updated_at":1763800000}`)
	task.RefreshedAt = 1763800000123456789
	record, err := json.Marshal(task)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("marshal/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&task); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal/codec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalTask(&task); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var t Task
			if err := json.Unmarshal(record, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal/codec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := unmarshalTask(record); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("head/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var h taskHead
			if err := json.Unmarshal(record, &h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("head/codec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := unmarshalTaskHead(record); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// marshalTaskSize is enough for the records of the samples (whose strings need no escapes):
// marshalTask allocates once.
func TestMarshalTaskSize(t *testing.T) {
	for _, task := range taskJSONSamples()[1:3] {
		b, err := marshalTask(&task)
		if err != nil {
			t.Fatal(err)
		}
		if size := marshalTaskSize(&task); len(b) > size || size > len(b)+200 {
			t.Errorf("marshalTaskSize = %d for a record of %d bytes: %s", size, len(b), b)
		}
	}
}
