package videotask

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

// FuzzListByIDs: the task list is asked for exactly the ids of the tasks (escaped as url.Values
// escapes them), and each listed item reaches the task whose id it names as JSON decodes it,
// whatever the upstream answers: an item for an id not asked proves the filter ignored, an item
// without a string id makes the answer unreadable, and a task the list leaves out is not listed.
// The reference is the matching written plainly: idString of each item into a map by id.
func FuzzListByIDs(f *testing.F) {
	for _, c := range []struct{ ids, body string }{
		{"cgt-1\ncgt-2", `{"items":[{"id":"cgt-1","status":"running"},{"id":"cgt-2"}]}`},
		{"cgt-1\ncgt-1\ncgt-3", `{"items":[{"id":"cgt\u002d1","status":"queued"},{"id":"cgt-1","status":"running"}]}`},
		{"a b&c=d\n%2F#x\nü", `{"items":[{"id":"a b&c=d"},{"id":"\u00fc"},{"id":"%2F#x"}]}`},
		{"cgt-1\nCGT-1", `{"items":[{"id":"CGT-1"},{"id":"cgt-4"}]}`},
		{"cgt-1\ncgt-2", `{"items":[{"id":null},{"id":1}]}`},
		{"cgt-1\ncgt-2", `{"items":[null,{"status":"running"}]}`},
	} {
		f.Add(c.ids, []byte(c.body))
	}
	var answer atomic.Pointer[[]byte]
	var query atomic.Pointer[url.URL]
	up := newFakeUpstream(f, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"id":"cgt-made"}`)
			return
		}
		query.Store(r.URL)
		w.Write(*answer.Load())
	})
	h := newHandler(f, up.URL, nil)
	made := serve(h, http.MethodPost, createPath, `{"model":"m","content":[{"type":"text","text":"hi"}]}`)
	var created struct{ ID string }
	if err := json.Unmarshal(made.Body.Bytes(), &created); err != nil || created.ID == "" {
		f.Fatalf("create = %d %s", made.Code, made.Body)
	}
	task, err := h.Store.Task(context.Background(), created.ID)
	if err != nil {
		f.Fatal(err)
	}
	p, ok := h.boundUpstream(task)
	if !ok {
		f.Fatal("the task has no upstream")
	}
	f.Fuzz(func(t *testing.T, idList string, body []byte) {
		ids := strings.Split(idList, "\n")
		if len(ids) > MaxRefreshBatch {
			return
		}
		tasks := make([]storage.Task, len(ids))
		for i, id := range ids {
			tasks[i] = storage.Task{ID: id, Provider: task.Provider, Upstream: task.Upstream}
		}
		answer.Store(&body)
		got, err := h.listByIDs(context.Background(), p, tasks)

		asked := query.Load()
		if asked.Path != "/api/v3/"+TasksPath {
			t.Fatalf("the list was asked at %s", asked.Path)
		}
		q := url.Values{"filter.task_ids": ids, "page_num": {"1"}, "page_size": {strconv.Itoa(len(ids))}}
		if asked.RawQuery != q.Encode() || !slices.Equal(asked.Query()["filter.task_ids"], ids) {
			t.Fatalf("ids %q asked as %s", ids, asked.RawQuery)
		}

		want, wantErr := listedByID(ids, body)
		if !errors.Is(err, wantErr) {
			t.Fatalf("listByIDs(%q, %s): %v, want %v", ids, body, err, wantErr)
		}
		if err != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("answers for %d ids, want %d", len(got), len(want))
		}
		for id, fields := range want {
			a := got[id]
			if a == nil || a.listed != (fields != nil) || fields != nil && !reflect.DeepEqual(a.fields, fields) {
				t.Fatalf("answer of %q = %+v, want listed %v with %v (body %s)", id, a, fields != nil, fields, body)
			}
		}
	})
}

// listedByID is what listByIDs answers for ids and a list answer body, written plainly: the
// fields of the item listed for each id asked (nil when none is), or its error.
func listedByID(ids []string, body []byte) (map[string]map[string]json.RawMessage, error) {
	want := make(map[string]map[string]json.RawMessage, len(ids))
	for _, id := range ids {
		want[id] = nil
	}
	items, ok := listItems(body)
	if !ok {
		return nil, upstream.ErrUnreadable
	}
	for _, item := range items {
		id, ok := idString(item["id"])
		if !ok {
			return nil, upstream.ErrUnreadable
		}
		if _, asked := want[id]; !asked {
			return nil, errNoIDFilter
		}
		want[id] = item
	}
	return want, nil
}
