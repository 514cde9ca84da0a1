package imageedit

import (
	"strings"
	"testing"
)

// An answer is images, a task, or a failure; anything else is unrecognisable (502), and a task id
// must be one a client can use.
func TestAnswerTaskID(t *testing.T) {
	for _, tc := range []struct {
		body, task string
		ok         bool
	}{
		{`{"created":1,"data":[{"url":"https://cdn.example.com/0.png"}]}`, "", true},
		{`{"id":"imgt-1","status":"queued"}`, "imgt-1", true},
		{`{"task_id":"imgt-2","id":"other","status":"queued"}`, "imgt-2", true},
		{`{"id":"img-3","data":[{"url":"https://cdn.example.com/0.png"}]}`, "", true},
		{`{"created":1,"data":[]}`, "", true},
		{`{"status":"failed","error":{"message":"no"}}`, "", true},
		{`<<not json>>`, "", false},
		{`null`, "", false},
		{`[{"url":"x"}]`, "", false},
		{`{"status":"queued"}`, "", false},
		{`{"status":"failed","error":null}`, "", false},
		{`{"id":"imgt/../../files"}`, "imgt/../../files", false},
		{`{"id":"` + strings.Repeat("a", 300) + `"}`, strings.Repeat("a", 300), false},
	} {
		task, ok := readAnswerID([]byte(tc.body))
		if ok != tc.ok || (ok && task != tc.task) {
			t.Errorf("%.60s: task %.20q ok %v, want %.20q %v", tc.body, task, ok, tc.task, tc.ok)
		}
	}
}

// readAnswerID is readAnswer without the image count.
func readAnswerID(body []byte) (string, bool) {
	id, _, ok := readAnswer(body)
	return id, ok
}
