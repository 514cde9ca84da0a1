package videotask

import (
	"encoding/json"
	"testing"
)

// FuzzCreatedID: the task id of a create's answer is read as json.Unmarshal reads it, whatever
// the answer, with or without the decoder.
func FuzzCreatedID(f *testing.F) {
	for _, seed := range []string{
		`{"id":"cgt-2025-1"}`, "{\"id\":\"cgt-1\"}\n", ` {"id":"a"} `, `{"id":""}`, `{"id":"a","id":"b"}`,
		`{"ID":"a"}`, `{"id":"a\u0041"}`, `{"id":"a\"b"}`, `{"id":1}`, `{"id":"a"`, `{"id":"a"}x`,
		"\u00a0{\"id\":\"a\"}", `{"id":"é"}`, `{"id":"a","status":"queued"}`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want struct {
			ID string `json:"id"`
		}
		wantOK := json.Unmarshal(body, &want) == nil
		id, ok := createdID(body)
		if ok != wantOK || ok && id != want.ID {
			t.Fatalf("createdID(%q) = %q, %v; json.Unmarshal: %q, %v", body, id, ok, want.ID, wantOK)
		}
	})
}
