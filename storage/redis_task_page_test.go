package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// A list without a total reads only its page's records (one HMGET each, and one for the cursor's
// record) from an account of 300 tasks, from the start or from a cursor, in both orders; a list with a total reads every record
// behind its start.
func TestRedisTaskListReadsOnlyThePage(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	s := openRedis(t, redisLocation(srv.URL(), "page"))
	defer s.Close()
	ctx := context.Background()
	expires := time.Now().Add(time.Hour).Unix()
	for i := range 300 {
		task := storage.Task{ID: fmt.Sprintf("cgt-%03d", i), Kind: storage.KindVideo, Account: "acme", Status: "queued",
			CreatedAt: int64(1000 + i/10), ExpiresAt: expires} // ten tasks a second
		if _, err := s.CreateTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		q     storage.TaskQuery
		first string
	}{
		{storage.TaskQuery{PageSize: 21}, "cgt-299"},
		{storage.TaskQuery{PageSize: 21, Oldest: true}, "cgt-000"},
		{storage.TaskQuery{PageSize: 21, After: "cgt-144"}, "cgt-143"},
		{storage.TaskQuery{PageSize: 21, After: "cgt-144", Oldest: true}, "cgt-145"},
		{storage.TaskQuery{PageNum: 3, PageSize: 21, After: "cgt-220"}, "cgt-177"},
	} {
		c.q.Kind, c.q.NoTotal = storage.KindVideo, true
		before := srv.CommandCalls(t, "hmget")
		page, err := s.ListTasks(ctx, "acme", c.q)
		if err != nil || len(page.Tasks) != 21 || page.Tasks[0].ID != c.first {
			t.Fatalf("%+v: %d tasks, %v; want a page of 21 from %s", c.q, len(page.Tasks), err, c.first)
		}
		if read, most := srv.CommandCalls(t, "hmget")-before, max(c.q.PageNum, 1)*21+1; read > most {
			t.Fatalf("%+v: read %d records for a page of 21, want at most %d", c.q, read, most)
		}
	}
	before := srv.CommandCalls(t, "hmget")
	if _, err := s.ListTasks(ctx, "acme", storage.TaskQuery{Kind: storage.KindVideo, PageSize: 21, After: "cgt-200"}); err != nil {
		t.Fatal(err)
	}
	if read := srv.CommandCalls(t, "hmget") - before; read != 201 {
		t.Fatalf("a list with a total read %d records, want the cursor's and the 200 behind it", read)
	}
}
