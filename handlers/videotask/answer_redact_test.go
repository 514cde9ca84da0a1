package videotask

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The watcher's batched read (Ark's task list) stores no answer that quotes the credential the
// gateway sent: a failed task's message and a member of the provider's own that echo it are
// stored, and so answered to clients and callbacks, with the credential [redacted] and the rest of
// the answer kept. (The reads of one task, at a client's poll, are proved by the integration test
// TestTaskAnswersNeverQuoteTheCredential.)
func TestBatchedAnswersNeverQuoteTheCredential(t *testing.T) {
	var ids []string
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case r.Method == http.MethodPost:
			ids = append(ids, fmt.Sprintf("cgt-echo-%d", len(ids)))
			fmt.Fprintf(w, `{"id":%q}`, ids[len(ids)-1])
		case r.URL.Query().Has("filter.task_ids"):
			fmt.Fprintf(w, `{"items":[`+
				`{"id":%q,"status":"failed","error":{"code":"E","message":"key %s refused"}},`+
				`{"id":%q,"status":"running","debug":{"authorization":"Bearer %s","region":"x"}}],"total":2}`,
				ids[0], token, ids[1], token)
		default:
			t.Errorf("%s %s: a task was read on its own, not through the list", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
		}
	})
	h := newHandler(t, up.URL, nil)
	p, tasks := batchOf(t, h, 2)
	if calls, _ := h.refreshBatch(context.Background(), p, tasks, nil, nil); calls != 1 {
		t.Fatalf("the batch made %d upstream calls, want its one list call", calls)
	}
	for i, want := range []string{`"message":"key [redacted] refused"`, `"region":"x"`} {
		stored, err := h.Store.Task(context.Background(), tasks[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		answer := string(h.clientAnswer(context.Background(), stored))
		if strings.Contains(answer, "upstream-secret") || !strings.Contains(answer, want) || !strings.Contains(answer, "[redacted]") {
			t.Fatalf("task %d's stored answer is %s; want %s with the credential [redacted]", i, answer, want)
		}
		if i == 0 && stored.Status != StatusFailed {
			t.Fatalf("task 0 is %s, want failed", stored.Status)
		}
	}
}
