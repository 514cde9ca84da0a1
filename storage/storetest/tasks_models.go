package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// createModelTasks creates six tasks of alice, prefix 0 to 5, one a second: the even ones of
// video-a, the odd ones of video-b, but the last, which names no model.
func createModelTasks(t *testing.T, s storage.Store, prefix string) {
	t.Helper()
	for i := range 6 {
		task := newTask(fmt.Sprintf("%s%d", prefix, i), "alice", int64(100+i))
		task.Model = []string{"video-a", "video-b"}[i%2]
		if i == 5 {
			task.Model = ""
		}
		mustCreate(t, s, task)
	}
}

// onlyA is the ModelAllowed of a key that may use video-a only.
func onlyA(model string) bool { return model == "video-a" }

// testTaskListModelAllowed: a list whose ModelAllowed refuses some models (a key restricted to
// others) has none of their tasks, in its pages and its Total, and nothing behind a cursor at one
// of them, as behind an id the account does not have; a task that names no model is listed.
func testTaskListModelAllowed(t *testing.T, s storage.Store) {
	ctx := context.Background()
	createModelTasks(t, s, "cgt-m")
	list := func(q storage.TaskQuery) ([]string, int) {
		t.Helper()
		q.Kind, q.PageNum, q.ModelAllowed = storage.KindVideo, 1, onlyA
		page, err := s.ListTasks(ctx, "alice", q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, task := range page.Tasks {
			ids = append(ids, task.ID)
		}
		return ids, page.Total
	}
	if ids, total := list(storage.TaskQuery{PageSize: 10}); !slices.Equal(ids, []string{"cgt-m5", "cgt-m4", "cgt-m2", "cgt-m0"}) || total != 4 {
		t.Fatalf("list = %v, total %d; want the video-a tasks and the one without a model, total 4", ids, total)
	}
	if ids, total := list(storage.TaskQuery{PageSize: 1, PageNum: 2, IDs: []string{"cgt-m1", "cgt-m3"}}); len(ids) != 0 || total != 0 {
		t.Fatalf("list of video-b ids = %v, total %d; want nothing", ids, total)
	}
	for _, oldest := range []bool{false, true} {
		if ids, _ := list(storage.TaskQuery{PageSize: 10, Oldest: oldest, After: "cgt-m3", NoTotal: true}); len(ids) != 0 {
			t.Fatalf("list after a video-b task (oldest first: %v) = %v; want nothing", oldest, ids)
		}
	}
	if ids, _ := list(storage.TaskQuery{PageSize: 10, Oldest: true, After: "cgt-m2", NoTotal: true}); !slices.Equal(ids, []string{"cgt-m4", "cgt-m5"}) {
		t.Fatalf("list after a video-a task, oldest first = %v; want cgt-m4 cgt-m5", ids)
	}
}

// testTaskSearchModelAllowed: a search (of one account, and across accounts) whose ModelAllowed
// refuses some models has none of their tasks on any page, and keeps the tasks that name no
// model, as TaskQuery.ModelAllowed does for lists.
func testTaskSearchModelAllowed(t *testing.T, s storage.Store) {
	ctx := context.Background()
	createModelTasks(t, s, "cgt-q")
	want := []string{"cgt-q5", "cgt-q4", "cgt-q2", "cgt-q0"}
	q := storage.TaskSearch{Kind: storage.KindVideo, Limit: 2, ModelAllowed: onlyA}
	if ids, _ := readSearch(t, q, func(q storage.TaskSearch) (storage.TaskSearchPage, error) { return s.SearchTasks(ctx, "alice", q) }); !slices.Equal(ids, want) {
		t.Fatalf("search = %v; want %v", ids, want)
	}
	if ids, _ := readSearch(t, q, func(q storage.TaskSearch) (storage.TaskSearchPage, error) { return s.SearchAllTasks(ctx, q) }); !slices.Equal(ids, want) {
		t.Fatalf("search of every account = %v; want %v", ids, want)
	}
	q.Model = "video-b"
	if ids, _ := readSearch(t, q, func(q storage.TaskSearch) (storage.TaskSearchPage, error) { return s.SearchTasks(ctx, "alice", q) }); len(ids) != 0 {
		t.Fatalf("search of video-b = %v; want nothing", ids)
	}
}
