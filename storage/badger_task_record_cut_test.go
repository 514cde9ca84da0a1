package storage

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzTaskRecordCutID: whatever the task's id and the upstream's answer (the id quoted once,
// twice, escaped, inside another string, or an id holding quotes, backslashes or odd bytes), the
// answer read back from a taskRecordV2 record is the one stored, compacted as json.Marshal
// writes it, byte for byte; the id is put back only where it was cut.
func FuzzTaskRecordCutID(f *testing.F) {
	for _, seed := range []struct{ id, result string }{
		{"cgt-1", `{"id":"cgt-1","status":"running"}`},
		{"cgt-1", `{"id":"cgt-1","again":"cgt-1"}`},
		{"cgt-1", `{"id":"\u0063gt-1","x":"cgt-1"}`},
		{"cgt-1", `{"note":"the task cgt-1 runs","id":"cgt-1"}`},
		{"cgt-1", `{"id":"cgt-2"}`},
		{"cgt-1", `{ "id" : "cgt-1" , "s": [ "cgt-1" ] }`},
		{"a", `{"a":"a","b":"\"a\""}`},
		{`a","b`, `["a","b"]`},
		{`\`, `["\\","\\"]`},
		{"", `{"id":""}`},
		{"<&>", `{"id":"<&>"}`},
		{"id", `"id"`},
		{"\xff", "\"\xff\""},
	} {
		f.Add(seed.id, []byte(seed.result))
	}
	// Nested deeper than appendCompactValue follows: compacted by json.Marshal instead.
	deep := strings.Repeat("[", 100) + `"cgt-1"` + strings.Repeat("]", 100)
	f.Add("cgt-1", []byte(`{"d": `+deep+`, "id": "cgt-1", "h": "<&>"}`))
	f.Fuzz(func(t *testing.T, id string, result []byte) {
		want, err := json.Marshal(json.RawMessage(result))
		if err != nil {
			return // not one JSON value: encodeTaskRecord refuses it too
		}
		task := Task{ID: id, Status: "running", Result: json.RawMessage(result), Version: 2}
		record, err := encodeTaskRecord(&task)
		if err != nil {
			t.Fatalf("encodeTaskRecord(%q, %q): %v", id, result, err)
		}
		got, err := decodeTaskRecord(id, record)
		if err != nil {
			t.Fatalf("decodeTaskRecord(%q): %v", record, err)
		}
		if !bytes.Equal(got.Result, want) || got.ID != id {
			t.Fatalf("task %q stored %q, read back %q (id %q)", id, want, got.Result, got.ID)
		}
		if _, err := decodeTaskHead(record); err != nil {
			t.Fatalf("decodeTaskHead(%q): %v", record, err)
		}
		// Read with another id, the answer changes only where the id was cut.
		if other := id + "x"; id != "" && strings.Contains(string(want), `"`+id+`"`) {
			again, err := decodeTaskRecord(other, record)
			if err != nil || bytes.Equal(again.Result, want) {
				t.Fatalf("read as %q: %q, %v", other, again.Result, err)
			}
		}
	})
}
