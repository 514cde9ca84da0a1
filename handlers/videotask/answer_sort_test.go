package videotask

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

// An upstream answer with as many members as upstream.MaxBody holds (a broken or hostile
// provider) is turned into the client's answer in time that grows as n log n, not n²: the
// watcher and every client read build one from each answer. Sorted by insertion, its ~420,000
// members took more than 30 s of CPU (the test stopped waiting); sorted as n log n, 1.4 s. What
// the answer keeps of them is bounded.
func TestQueryResultOfAHugeAnswer(t *testing.T) {
	body := []byte(`{"id":"cgt-1","status":"running"`)
	for i := 0; len(body) < upstream.MaxBody-32; i++ {
		body = append(body, `,"m`...)
		body = strconv.AppendInt(body, int64(i), 36)
		body = append(body, `":0`...)
	}
	body = append(body, '}')
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatal(err)
	}
	done := make(chan answerFields, 1)
	start := time.Now()
	go func() {
		fields, _ := queryResult(answer, storage.Task{ID: "cgt-1", Model: "m"})
		done <- fields
	}()
	// A generous bound: queryResult took 1.4 s here (2.6 s with -race) on the loaded 2-core VM;
	// sorted by insertion it had not finished after 30 s.
	const budget = 30 * time.Second
	select {
	case fields := <-done:
		t.Logf("queryResult of %d members: %v", len(answer), time.Since(start))
		// The contract's members (id and status set; model, created_at, updated_at, error and
		// content added), and of the upstream's others what a record keeps (answer_bound.go).
		body, err := encodeAnswer(fields, true)
		if err != nil || len(body) > MaxAnswerExtras+512 || fields.get("status") == nil || fields.get("content") == nil {
			t.Errorf("%d members (%d bytes, %v) from an answer of %d", len(fields), len(body), err, len(answer))
		}
		for i := 1; i < len(fields); i++ {
			if fields[i-1].name >= fields[i].name {
				t.Fatalf("members %d and %d out of order: %q, %q", i-1, i, fields[i-1].name, fields[i].name)
			}
		}
	case <-time.After(budget):
		t.Fatalf("queryResult of an answer with %d members took more than %v", len(answer), budget)
	}
}
