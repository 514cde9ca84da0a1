package videotask

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// listByIDs matches each listed item to the tasks asked for by its id as JSON decodes it: an id
// written with escapes is the same id, a task asked for twice gets the answer in both places, and
// a task the list leaves out is not listed. An item with an id that was not asked for proves the
// filter ignored.
func TestListByIDsMatchesDecodedIDs(t *testing.T) {
	var answer atomic.Pointer[string]
	answer.Store(new(`{"items":[{"id":"cgt\u002d1","status":"running"},{"id":"cgt-2","status":"queued"}],"total":2}`))
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"id":"cgt-made"}`)
			return
		}
		io.WriteString(w, *answer.Load())
	})
	h := newHandler(t, up.URL, nil)
	p, made := tasksOf(t, h, "m", 1)
	asked := []storage.Task{{ID: "cgt-1"}, {ID: "cgt-2"}, {ID: "cgt-1"}, {ID: "cgt-3"}}
	for i := range asked {
		asked[i].Upstream, asked[i].Provider = made[0].Upstream, made[0].Provider
	}
	answers, err := h.listByIDs(context.Background(), p, asked)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"cgt-1": `"running"`, "cgt-2": `"queued"`} {
		if a := answers[id]; a == nil || !a.listed || string(a.fields["status"]) != want {
			t.Errorf("answer of %s = %+v, want listed with status %s", id, a, want)
		}
	}
	if a := answers["cgt-3"]; a == nil || a.listed {
		t.Errorf("answer of cgt-3 (not in the list) = %+v, want an unlisted slot", a)
	}
	if len(answers) != 3 {
		t.Errorf("answers for %d ids, want 3", len(answers))
	}

	answer.Store(new(`{"items":[{"id":"cgt\u002d4","status":"running"}],"total":1}`))
	if _, err := h.listByIDs(context.Background(), p, asked); err != errNoIDFilter {
		t.Errorf("a list of a task not asked for: %v, want errNoIDFilter", err)
	}
}

// listQuery writes what url.Values encodes: the ids in order, escaped, then the page.
func TestListQuery(t *testing.T) {
	for _, ids := range [][]string{{"cgt-1"}, {"cgt-2", "cgt-1", "cgt-2"}, {"a b&c=d", "ü/?#%", ""}} {
		var tasks []storage.Task
		q := url.Values{}
		for _, id := range ids {
			tasks = append(tasks, storage.Task{ID: id})
			q.Add("filter.task_ids", id)
		}
		q.Set("page_num", "1")
		q.Set("page_size", strconv.Itoa(len(ids)))
		if got, want := listQuery(tasks), TasksPath+"?"+q.Encode(); got != want {
			t.Errorf("listQuery(%q) = %s, want %s", ids, got, want)
		}
	}
}
