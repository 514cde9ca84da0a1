package passthrough

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/storage"
)

// A key at its limit gets back the slots of its objects whose lease has ended, once, and only
// its own: another key's lapsed object, a recent one and a finished one keep theirs. One
// instance sweeps a key at most once a minute.
func TestEndLapsedSlots(t *testing.T) {
	store := ownersStore(t)
	base := time.Now()
	clock := base
	rt := &Router{Catalog: catalog(t), Owners: store, Now: func() time.Time { return clock }}
	ctx := context.Background()
	rec := func(id, key string, age time.Duration, finished bool) storage.Task {
		return storage.Task{ID: id, Kind: KindVideo, Account: "acme", KeyID: key, Provider: "ark", Model: "m",
			Status: statusActive, Active: true, Finished: finished, CreatedAt: base.Add(-age).Unix()}
	}
	for _, r := range []storage.Task{
		rec("old", "k", 2*time.Hour, false),
		rec("recent", "k", 10*time.Minute, false),
		rec("other-key", "k2", 2*time.Hour, false),
		rec("done", "k", 3*time.Hour, true),
	} {
		if _, err := store.CreateTask(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	ended, err := rt.EndLapsedSlots(ctx, acme)
	if err != nil || len(ended) != 1 || ended[0].ID != "old" || !ended[0].Finished || ended[0].Status != statusLapsed {
		t.Fatalf("first sweep = %+v, %v; want old only, finished", ended, err)
	}
	if ended, err := rt.EndLapsedSlots(ctx, acme); err != nil || len(ended) != 0 {
		t.Fatalf("a second sweep within a minute = %+v, %v; want none", ended, err)
	}
	clock = base.Add(55 * time.Minute) // recent's lease ends at base+50m
	ended, err = rt.EndLapsedSlots(ctx, acme)
	if err != nil || len(ended) != 1 || ended[0].ID != "recent" {
		t.Fatalf("sweep after recent's lease = %+v, %v; want recent only", ended, err)
	}
	if got, _ := store.Task(ctx, "other-key"); got.Finished {
		t.Fatal("another key's object was finished")
	}
}

// A retrieve that shows a final status finishes the object once, however many show it at once;
// a running status, an error answer or an ambiguous status finish nothing.
func TestObjectWatchFinishesOnce(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store}
	ctx := context.Background()
	if _, err := store.CreateTask(ctx, storage.Task{ID: "video_1", Kind: KindVideo, Account: "acme", KeyID: "k",
		Provider: "ark", Model: "m", Status: statusActive, Active: true, CreatedAt: time.Now().Unix()}); err != nil {
		t.Fatal(err)
	}
	route := Route{watched: "video_1"}
	answer := func(status int, body string) (storage.Task, bool) {
		ow := rt.WatchObject(httptest.NewRecorder(), route)
		ow.WriteHeader(status)
		if _, err := ow.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		got, won, err := ow.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got, won
	}
	for _, tc := range []struct {
		status int
		body   string
	}{
		{http.StatusOK, `{"id":"video_1","status":"in_progress"}`},
		{http.StatusNotFound, `{"error":{"message":"gone"},"status":"failed"}`},
		{http.StatusOK, `{"id":"video_1","status":"completed","Status":"queued"}`},
		{http.StatusOK, `{"id":"video_1","status":"completed","status":"queued"}`},
		{http.StatusOK, `{"id":"video_1","result":{"status":"completed"}}`},
	} {
		if _, won := answer(tc.status, tc.body); won {
			t.Fatalf("%d %s finished the object", tc.status, tc.body)
		}
	}
	var wins atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, won := answer(http.StatusOK, `{"id":"video_1","status":"Completed"}`); won {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d retrieves finished the object, want 1", wins.Load())
	}
	if got, _ := store.Task(ctx, "video_1"); !got.Finished || got.Status != "completed" {
		t.Fatalf("record = %+v", got)
	}
}

// A key's lapsed object is found however many newer slot-holding objects the account has: the
// sweep reads the oldest first, which are the ones whose lease can have ended (a newest-first
// page of maxLapsedScan would hold only the newer ones, and the lapsed slot would never be
// given back).
func TestEndLapsedSlotsPastManyNewer(t *testing.T) {
	store := ownersStore(t)
	now := time.Unix(1_800_000_000, 0)
	rt := &Router{Catalog: catalog(t), Owners: store, Now: func() time.Time { return now }}
	ctx := context.Background()
	rec := func(id, key string, age time.Duration) storage.Task {
		return storage.Task{ID: id, Kind: KindVideo, Account: "acme", KeyID: key, Provider: "ark", Model: "m",
			Status: statusActive, Active: true, CreatedAt: now.Add(-age).Unix()}
	}
	if _, err := store.CreateTask(ctx, rec("old", "k", 2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i := range maxLapsedScan {
		if _, err := store.CreateTask(ctx, rec(fmt.Sprintf("new-%d", i), "k2", time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	ended, err := rt.EndLapsedSlots(ctx, auth.Identity{Account: "acme", KeyID: "k"})
	if err != nil || len(ended) != 1 || ended[0].ID != "old" {
		t.Fatalf("sweep = %d records (%v); want old", len(ended), err)
	}
}
