package passthrough

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

// LapsedHeldObjects ends, once, the videos and image tasks whose record carries a hold past
// their lease: not a recent one, not one without a hold (its slot waits for its key's sweep), not a
// finished one, not a video task of the gateway's own (its watcher ends it); two sweepers at
// once end each once.
func TestLapsedHeldObjectsEndOnce(t *testing.T) {
	server := testredis.Start(t, testredis.Options{})
	t.Run("badger", func(t *testing.T) { lapsedVideosEndOnce(t, ownersStore(t)) })
	t.Run("redis", func(t *testing.T) {
		s, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: server.URL(), KeyPrefix: "lapsed", Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		lapsedVideosEndOnce(t, s)
	})
}

func lapsedVideosEndOnce(t *testing.T, store AllOwners) {
	base := time.Now()
	ctx := context.Background()
	rec := func(id, kind, hold string, age time.Duration, finished bool) storage.Task {
		return storage.Task{ID: id, Kind: kind, Account: "acme", KeyID: "k", Provider: "openai", Model: "sora-2",
			Status: statusActive, Active: true, Finished: finished, CreatedAt: base.Add(-age).Unix(), HoldID: hold}
	}
	for _, r := range []storage.Task{
		rec("old", KindVideo, "h1", 2*time.Hour, false),
		rec("old-generation", KindVideoGeneration, "h2", 90*time.Minute, false),
		rec("recent", KindVideo, "h3", 10*time.Minute, false),
		rec("unheld", KindVideo, "", 2*time.Hour, false),
		rec("image", storage.KindImage, "h4", 2*time.Hour, false),
		rec("done", KindVideo, "h5", 3*time.Hour, true),
		rec("video-task", storage.KindVideo, "h6", 2*time.Hour, false),
	} {
		if _, err := store.CreateTask(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	ended := map[string]int{}
	finished := func(_ context.Context, t storage.Task) {
		mu.Lock()
		defer mu.Unlock()
		ended[t.ID]++
	}
	sweepers := []*LapsedHeldObjects{{Owners: store, Finished: finished}, {Owners: store, Finished: finished}}
	var total atomic.Int64
	var wg sync.WaitGroup
	for _, s := range sweepers {
		wg.Go(func() {
			n, err := s.Pass(ctx, base)
			if err != nil {
				t.Error(err)
			}
			total.Add(int64(n))
		})
	}
	wg.Wait()
	if total.Load() != 3 || len(ended) != 3 || ended["old"] != 1 || ended["old-generation"] != 1 || ended["image"] != 1 {
		t.Fatalf("ended %v (%d); want old, old-generation and image once each", ended, total.Load())
	}
	got, _ := store.Task(ctx, "old")
	if !got.Finished || got.Status != statusLapsed {
		t.Fatalf("old = %+v; want finished, lease_ended", got)
	}
	if n, err := sweepers[0].Pass(ctx, base.Add(55*time.Minute)); err != nil || n != 1 || ended["recent"] != 1 {
		t.Fatalf("a pass after recent's lease = %d, %v (%v); want recent", n, err, ended)
	}
	if n, err := sweepers[0].Pass(ctx, base.Add(2*time.Hour)); err != nil || n != 0 {
		t.Fatalf("a later pass = %d, %v; want none", n, err)
	}
}

// A completed video's answer reports the length and picture it was made at; a failed one's, or
// an answer whose fields repeat, nothing.
func TestObjectWatchReported(t *testing.T) {
	for _, c := range []struct {
		status, answer string
		want           billing.Usage
	}{
		{"completed", `{"id":"v","status":"completed","seconds":"8","size":"1280x720"}`, billing.Usage{VideoSeconds: 8, Resolution: "720p", Ratio: "16:9"}},
		{"completed", `{"id":"v","status":"completed","seconds":"4","size":"1024x1792"}`, billing.Usage{VideoSeconds: 4, Resolution: "1080p", Ratio: "9:16"}},
		{"succeeded", `{"id":"v","status":"succeeded","duration":6,"resolution":"1080p","ratio":"16:9"}`, billing.Usage{VideoSeconds: 6, Resolution: "1080p", Ratio: "16:9"}},
		{"completed", `{"id":"v","status":"completed"}`, billing.Usage{}},
		{"completed", `{"id":"v","status":"completed","seconds":"4","seconds":"12"}`, billing.Usage{}},
		{"failed", `{"id":"v","status":"failed","seconds":"8","size":"1280x720"}`, billing.Usage{}},
	} {
		ow := &ObjectWatch{}
		ow.body.WriteString(c.answer)
		if got := ow.Reported(storage.Task{Kind: KindVideo, Status: c.status}); got != c.want {
			t.Errorf("%s: reported %+v; want %+v", c.answer, got, c.want)
		}
	}
}
