package storage

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// The search across accounts merges the accounts' indexes: tasks of accounts whose names extend
// one another ("ali", "alice", "alice b") and of an account with a name past them all come out
// newest first, ties in a second by id descending, and pages of any size follow each other by
// cursor across the accounts' boundaries.
func TestBadgerSearchAllMergesTheAccountsIndexes(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	accounts := []string{"alice", "ali", "zoe", "alice b"}
	var want []string
	for i := range 20 {
		task := Task{ID: fmt.Sprintf("cgt-m%02d", i), Kind: KindVideo, Account: accounts[i%len(accounts)], Status: "queued",
			CreatedAt: int64(500 + i/3), ExpiresAt: time.Now().Add(time.Hour).Unix()}
		if _, err := b.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
		want = append(want, task.ID)
	}
	slices.Reverse(want)
	for _, limit := range []int{1, 3, 7, 50} {
		var got []string
		q := TaskSearch{Limit: limit}
		for range 30 {
			page, err := b.SearchAllTasks(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range page.Tasks {
				got = append(got, task.ID)
			}
			if page.Next == "" {
				break
			}
			q.Before = page.Next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pages of %d: %v; want %v", limit, got, want)
		}
	}
	page, err := b.SearchAllTasks(ctx, TaskSearch{Limit: 50, To: 502})
	if err != nil || len(page.Tasks) != 9 || page.Tasks[0].ID != "cgt-m08" {
		t.Fatalf("created up to 502: %+v, %v", page.Tasks, err)
	}
}
