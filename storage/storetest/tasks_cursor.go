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

// testTaskListSameSecond: tasks created in the same second have one complete order (by id), so
// that a cursor pages through them, in both orders, with and without a total, without skipping
// or repeating one; the tasks of other seconds come before and after them.
func testTaskListSameSecond(t *testing.T, s storage.Store) {
	ctx := context.Background()
	newest := []string{"cgt-new"} // the order of a newest-first list
	for i := range 3 {
		mustCreate(t, s, newTask(fmt.Sprintf("cgt-old%d", i), "alice", 100))
	}
	for i := range 40 {
		// Ids that do not sort in the order they were created in.
		mustCreate(t, s, newTask(fmt.Sprintf("cgt-%02d", (i*7)%40), "alice", 200))
	}
	mustCreate(t, s, newTask("cgt-new", "alice", 300))
	for i := 39; i >= 0; i-- {
		newest = append(newest, fmt.Sprintf("cgt-%02d", i))
	}
	newest = append(newest, "cgt-old2", "cgt-old1", "cgt-old0")
	oldest := slices.Clone(newest)
	slices.Reverse(oldest)

	for _, c := range []struct {
		oldest, noTotal bool
		want            []string
	}{{false, false, newest}, {false, true, newest}, {true, false, oldest}, {true, true, oldest}} {
		var got []string
		after := ""
		for range 20 {
			page, err := s.ListTasks(ctx, "alice", storage.TaskQuery{
				Kind: storage.KindVideo, PageNum: 1, PageSize: 4, Oldest: c.oldest, After: after, NoTotal: c.noTotal,
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.noTotal && page.Total != 0 {
				t.Fatalf("oldest %v: a list without a total has a total of %d", c.oldest, page.Total)
			}
			if !c.noTotal && page.Total != len(c.want)-len(got) {
				t.Fatalf("oldest %v, after %q: total %d, want the %d tasks behind it", c.oldest, after, page.Total, len(c.want)-len(got))
			}
			if len(page.Tasks) == 0 {
				break
			}
			for _, task := range page.Tasks {
				got = append(got, task.ID)
			}
			after = page.Tasks[len(page.Tasks)-1].ID
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("oldest %v, without total %v: paged\n%v\nwant\n%v", c.oldest, c.noTotal, got, c.want)
		}
	}
	// A later page by number without a total is the same page as with one.
	for _, oldest := range []bool{false, true} {
		q := storage.TaskQuery{Kind: storage.KindVideo, PageNum: 2, PageSize: 4, Oldest: oldest, After: "cgt-30"}
		with, err := s.ListTasks(ctx, "alice", q)
		if err != nil {
			t.Fatal(err)
		}
		q.NoTotal = true
		without, err := s.ListTasks(ctx, "alice", q)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(with.Tasks, without.Tasks, func(a, b storage.Task) bool { return a.ID == b.ID }) || len(with.Tasks) != 4 {
			t.Fatalf("oldest %v: page 2 behind cgt-30 = %d tasks with a total, %d without; want the same 4", oldest, len(with.Tasks), len(without.Tasks))
		}
	}
	mustCreate(t, s, newTask("cgt-bob", "bob", 200))
	for _, after := range []string{"cgt-unknown", "cgt-bob"} {
		page, err := s.ListTasks(ctx, "alice", storage.TaskQuery{Kind: storage.KindVideo, PageNum: 1, PageSize: 4, After: after, NoTotal: true})
		if err != nil || len(page.Tasks) != 0 {
			t.Fatalf("without a total, behind %s = %+v, %v; want nothing", after, page, err)
		}
	}
}
