package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// testTaskSearch: a search pages one account's tasks newest first by its cursor, with ties in
// one second kept in order, filters by status, model and time, never shows another account's
// task, and reads no more than Scan records for a page.
func testTaskSearch(t *testing.T, s storage.Store) {
	ctx := context.Background()
	// 30 tasks of alice, three a second (ties), every third succeeded, models m0 and m1.
	var want []string
	for i := range 30 {
		task := newTask(fmt.Sprintf("cgt-s%02d", i), "alice", int64(1000+i/3))
		task.Model = fmt.Sprint("m", i%2)
		if i%3 == 0 {
			task.Status = "succeeded"
		}
		mustCreate(t, s, task)
		want = append(want, task.ID)
	}
	mustCreate(t, s, newTask("cgt-bob", "bob", 1005))
	slices.Reverse(want) // newest first: within a second, the larger id first
	read := func(q storage.TaskSearch) ([]string, []int) {
		t.Helper()
		return readSearch(t, q, func(q storage.TaskSearch) (storage.TaskSearchPage, error) {
			page, err := s.SearchTasks(ctx, "alice", q)
			for _, task := range page.Tasks {
				if task.Account != "alice" {
					t.Fatalf("alice's search shows %s of %s", task.ID, task.Account)
				}
			}
			return page, err
		})
	}
	ids, sizes := read(storage.TaskSearch{Limit: 7})
	if !slices.Equal(ids, want) || fmt.Sprint(sizes) != "[7 7 7 7 2]" {
		t.Fatalf("pages of 7: %v sizes %v; want %v, [7 7 7 7 2]", ids, sizes, want)
	}
	ids, _ = read(storage.TaskSearch{Limit: 4, Status: "succeeded", Model: "m0"})
	if fmt.Sprint(ids) != "[cgt-s24 cgt-s18 cgt-s12 cgt-s06 cgt-s00]" {
		t.Fatalf("succeeded on m0: %v", ids)
	}
	ids, _ = read(storage.TaskSearch{Limit: 50, From: 1002, To: 1003})
	if fmt.Sprint(ids) != "[cgt-s11 cgt-s10 cgt-s09 cgt-s08 cgt-s07 cgt-s06]" {
		t.Fatalf("created 1002 to 1003: %v", ids)
	}
	// Scan bounds one page's reads: a rare match comes after pages cut short, each with a cursor.
	ids, sizes = read(storage.TaskSearch{Limit: 10, Scan: 10, Status: "succeeded", Model: "m1"})
	if fmt.Sprint(ids) != "[cgt-s27 cgt-s21 cgt-s15 cgt-s09 cgt-s03]" || len(sizes) < 3 || slices.Max(sizes) > 2 {
		t.Fatalf("succeeded on m1 with a scan of 10: %v in pages %v", ids, sizes)
	}
	if _, err := s.SearchTasks(ctx, "alice", storage.TaskSearch{Limit: 5, Before: "x'; --"}); err == nil {
		t.Fatal("a bad cursor was taken")
	}
	if page, err := s.SearchTasks(ctx, "ali", storage.TaskSearch{Limit: 5}); err != nil || len(page.Tasks) != 0 {
		t.Fatalf("an account named by a prefix of alice's name sees %v, %v", page.Tasks, err)
	}
	if page, err := s.SearchTasks(ctx, "bob", storage.TaskSearch{Limit: 5}); err != nil || len(page.Tasks) != 1 || !strings.HasSuffix(page.Tasks[0].ID, "bob") || page.Next != "" {
		t.Fatalf("bob's search = %+v, %v", page, err)
	}
}

// testTaskSearchAll: the operator's search across accounts pages every account's tasks newest
// first by the same cursor, filters as an account's search does, reads no more than Scan records
// for a page, and loses a deleted task.
func testTaskSearchAll(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var want []string
	for i := range 24 {
		task := newTask(fmt.Sprintf("cgt-x%02d", i), []string{"alice", "bob", "carol"}[i%3], int64(2000+i/2))
		if i%4 == 0 {
			task.Status = "failed"
		}
		mustCreate(t, s, task)
		want = append(want, task.ID)
	}
	slices.Reverse(want)
	read := func(q storage.TaskSearch) ([]string, []int) {
		t.Helper()
		return readSearch(t, q, func(q storage.TaskSearch) (storage.TaskSearchPage, error) { return s.SearchAllTasks(ctx, q) })
	}
	if ids, sizes := read(storage.TaskSearch{Limit: 5}); !slices.Equal(ids, want) || fmt.Sprint(sizes) != "[5 5 5 5 4]" {
		t.Fatalf("pages of 5: %v sizes %v; want %v", ids, sizes, want)
	}
	if ids, _ := read(storage.TaskSearch{Limit: 50, Status: "failed", From: 2004, To: 2009}); fmt.Sprint(ids) != "[cgt-x16 cgt-x12 cgt-x08]" {
		t.Fatalf("failed, created 2004 to 2009: %v", ids)
	}
	if ids, sizes := read(storage.TaskSearch{Limit: 4, Scan: 4, Status: "failed"}); len(ids) != 6 || len(sizes) < 6 || slices.Max(sizes) > 1 {
		t.Fatalf("failed with a scan of 4: %v in pages %v", ids, sizes)
	}
	if _, err := s.SearchAllTasks(ctx, storage.TaskSearch{Limit: 5, Before: "nope"}); err == nil {
		t.Fatal("a bad cursor was taken")
	}
	gone, err := s.Task(ctx, "cgt-x23")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTask(ctx, gone.ID, gone.Version); err != nil {
		t.Fatal(err)
	}
	if page, err := s.SearchAllTasks(ctx, storage.TaskSearch{Limit: 1}); err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != "cgt-x22" {
		t.Fatalf("newest after deleting cgt-x23 = %+v, %v", page.Tasks, err)
	}
}

// readSearch follows a search's pages from q to its end and returns the ids it showed and the
// size of each page.
func readSearch(t *testing.T, q storage.TaskSearch, search func(storage.TaskSearch) (storage.TaskSearchPage, error)) ([]string, []int) {
	t.Helper()
	var ids []string
	var sizes []int
	for range 50 {
		page, err := search(q)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page.Tasks))
		for _, task := range page.Tasks {
			ids = append(ids, task.ID)
		}
		if page.Next == "" {
			return ids, sizes
		}
		q.Before = page.Next
	}
	t.Fatal("the search did not end")
	return nil, nil
}
