package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// testTaskListCursor: a list read with a cursor (After) in both orders pages through one
// account's tasks without a gap or a repeat, skips what the filters leave out, and has nothing
// behind an id that is not in the account's list.
func testTaskListCursor(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for i := range 5 {
		mustCreate(t, s, newTask(fmt.Sprintf("cgt-a%d", i), "alice", int64(100+i)))
	}
	mustCreate(t, s, newTask("cgt-b0", "bob", 102))
	img := newTask("img-0", "alice", 103)
	img.Kind = storage.KindImage
	mustCreate(t, s, img)

	pages := func(oldest bool) (ids []string) {
		after := ""
		for range 10 {
			page, err := s.ListTasks(ctx, "alice", storage.TaskQuery{Kind: storage.KindVideo, PageNum: 1, PageSize: 2, Oldest: oldest, After: after})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Tasks) == 0 {
				return ids
			}
			for _, task := range page.Tasks {
				ids = append(ids, task.ID)
			}
			if page.Total != len(page.Tasks) && len(page.Tasks) != 2 {
				t.Fatalf("after %q: %d tasks of %d in all, on a page of 2", after, len(page.Tasks), page.Total)
			}
			after = page.Tasks[len(page.Tasks)-1].ID
		}
		t.Fatalf("the cursor never reached the end: %v", ids)
		return nil
	}
	if got, want := pages(false), []string{"cgt-a4", "cgt-a3", "cgt-a2", "cgt-a1", "cgt-a0"}; !slices.Equal(got, want) {
		t.Fatalf("newest first = %v, want %v", got, want)
	}
	if got, want := pages(true), []string{"cgt-a0", "cgt-a1", "cgt-a2", "cgt-a3", "cgt-a4"}; !slices.Equal(got, want) {
		t.Fatalf("oldest first = %v, want %v", got, want)
	}
	page, err := s.ListTasks(ctx, "alice", storage.TaskQuery{Kind: storage.KindVideo, PageNum: 1, PageSize: 10, After: "cgt-a3"})
	if err != nil || page.Total != 3 || len(page.Tasks) != 3 || page.Tasks[0].ID != "cgt-a2" {
		t.Fatalf("behind cgt-a3 = %+v, %v; want cgt-a2, a1, a0 and a total of 3", page, err)
	}
	for _, after := range []string{"cgt-b0", "cgt-unknown"} {
		page, err := s.ListTasks(ctx, "alice", storage.TaskQuery{Kind: storage.KindVideo, PageNum: 1, PageSize: 10, After: after})
		if err != nil || page.Total != 0 || len(page.Tasks) != 0 {
			t.Fatalf("behind %s (not alice's) = %+v, %v; want nothing", after, page, err)
		}
	}
}
