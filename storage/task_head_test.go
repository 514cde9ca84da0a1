package storage

import (
	"encoding/json"
	"reflect"
	"testing"
)

// taskHead decodes the fields of a Task record that it names, under the same JSON names, to the
// same values.
func TestTaskHeadIsPartOfTask(t *testing.T) {
	full := reflect.TypeFor[Task]()
	head := reflect.TypeFor[taskHead]()
	for i := range head.NumField() {
		hf := head.Field(i)
		tf, ok := full.FieldByName(hf.Name)
		if !ok || tf.Tag.Get("json") != hf.Tag.Get("json") || tf.Type != hf.Type {
			t.Errorf("taskHead.%s (%s %q) is not Task.%s", hf.Name, hf.Type, hf.Tag.Get("json"), hf.Name)
		}
	}
	task := Task{ID: "cgt-1", Kind: KindVideo, Account: "acme", KeyID: "k", Model: "m", CreatedAt: 100, UpdatedAt: 101,
		Status: "running", Result: json.RawMessage(`{"id":"cgt-1"}`), ExpiresAt: 200, FinishedAt: 150, Finished: true, Version: 7}
	js, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	var h taskHead
	if err := json.Unmarshal(js, &h); err != nil {
		t.Fatal(err)
	}
	want := Task{Kind: task.Kind, Account: task.Account, CreatedAt: task.CreatedAt, Status: task.Status,
		ExpiresAt: task.ExpiresAt, FinishedAt: task.FinishedAt, Finished: task.Finished, Version: task.Version}
	if got := h.task(); !reflect.DeepEqual(got, want) {
		t.Fatalf("head of %s = %+v, want %+v", js, got, want)
	}
	if !h.task().Expiry().Equal(task.Expiry()) || h.task().Unfinished() != task.Unfinished() {
		t.Fatal("the head's expiry or finish differs from the record's")
	}
}
