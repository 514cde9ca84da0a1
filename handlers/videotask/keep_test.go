package videotask

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/presign"
	"github.com/mediagw/mediagw/storage"
)

// keepClock is a clock that tests move, read by the copies' goroutines too.
type keepClock struct{ ns atomic.Int64 }

func (c *keepClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *keepClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newKeepClock() *keepClock {
	c := &keepClock{}
	c.ns.Store(time.Unix(1_764_200_000, 0).UnixNano())
	return c
}
func keepJobIn(t *testing.T, s storage.Store, id string) keepJob {
	t.Helper()
	rec, err := s.Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := keepJobOf(rec)
	return j
}

// unreachableBucket is a real S3 client of a bucket at an address where nothing listens: the
// copies of these tests fail at their source, before any bucket call.
func unreachableBucket(t *testing.T) *presign.S3 {
	b, err := presign.NewS3(context.Background(), presign.S3Config{Bucket: "b", Endpoint: "http://127.0.0.1:1", PathStyle: true,
		AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newKeepingHandler is a handler with keep_results whose upstream's task is succeeded, with a
// result URL that answers 404 (the provider's short-lived URL has gone).
func newKeepingHandler(t *testing.T, clock *keepClock) (*Handler, *fakeUpstream) {
	var up *fakeUpstream
	up = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			writeJSON(w, map[string]string{"id": "cgt-kept"})
		case strings.HasPrefix(r.URL.Path, "/api/v3/"+TasksPath+"/"):
			writeJSON(w, map[string]any{"id": "cgt-kept", "model": "m", "status": "succeeded",
				"content": map[string]string{"video_url": up.URL + "/files/gone.mp4"}})
		default:
			http.NotFound(w, r)
		}
	})
	h := newHandler(t, up.URL, nil)
	h.Now = clock.now
	h.Keep = &Keeper{Bucket: unreachableBucket(t), Attempts: 2, Lease: 3 * time.Second}
	return h, up
}

// A success is held as a pending copy: the task answers running with empty content and cannot
// be cancelled; a failed copy is retried after its backoff, and after the last attempt the task
// ends succeeded with the provider's own result, once.
func TestKeepFailedCopyEndsWithProviderResult(t *testing.T) {
	clock := newKeepClock()
	h, up := newKeepingHandler(t, clock)
	if w := serve(h, "POST", createPath, createBody); w.Code != 200 {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	w := serve(h, "GET", createPath+"/cgt-kept", "")
	if got := decode(t, w); got["status"] != "running" || len(got["content"].(map[string]any)) != 0 {
		t.Fatalf("a success being kept answers %s; want running with empty content", w.Body)
	}
	waitUntil(t, "the first attempt to fail", func() bool {
		j := keepJobIn(t, h.Store, "cgt-kept")
		return j.Attempts == 1 && j.Owner == "" && j.NextAt > 0
	})
	if w := serve(h, "DELETE", createPath+"/cgt-kept", ""); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "task_running") {
		t.Fatalf("cancel while kept = %d %s", w.Code, w.Body)
	}
	// Before the backoff has passed nothing is tried; after it, the last attempt fails too.
	h.keepSoon(mustTask(t, h.Store, "cgt-kept"))
	if j := keepJobIn(t, h.Store, "cgt-kept"); j.Attempts != 1 {
		t.Fatalf("a copy was tried again before its backoff: %+v", j)
	}
	clock.add(keepBackoff(1) + time.Second)
	waitUntil(t, "the copy to be given up", func() bool {
		w := serve(h, "GET", createPath+"/cgt-kept", "")
		return decode(t, w)["status"] == "succeeded"
	})
	got := decode(t, serve(h, "GET", createPath+"/cgt-kept", ""))
	if got["content"].(map[string]any)["video_url"] != up.URL+"/files/gone.mp4" {
		t.Fatalf("a given-up copy answers %v; want the provider's result", got)
	}
	rec := mustTask(t, h.Store, "cgt-kept")
	if j, _ := keepJobOf(rec); !j.GaveUp || j.Kept || j.Attempts != 2 || !rec.Finished {
		t.Fatalf("record after giving up: %+v, job %+v", rec, j)
	}
}

// A copy is claimed by one Keeper at a time: another Keeper sharing the store takes it only once
// the lease has run out, and then the first one's outcome no longer counts; the task is
// finished once.
func TestKeepClaimIsExclusive(t *testing.T) {
	clock := newKeepClock()
	a, _ := newKeepingHandler(t, clock)
	b := &Handler{Catalog: a.Catalog, Store: a.Store, Client: a.Client, Logger: a.Logger, Now: a.Now,
		Keep: &Keeper{Bucket: a.Keep.Bucket, Lease: a.Keep.Lease, Owner: "b"}}
	a.Keep.Owner = "a"
	a.Keep.init()
	b.Keep.init()
	job := keepJob{Answer: json.RawMessage(`{"id":"t1","status":"succeeded","content":{"video_url":"https://provider.example/v.mp4"}}`), Base: "results/t1-x"}
	if _, err := a.Store.CreateTask(context.Background(), storage.Task{ID: "t1", Kind: storage.KindVideo, Account: "acme", Provider: "p",
		Model: "m", Status: StatusRunning, CreatedAt: clock.now().Unix(), Keep: mustJSON(job)}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, won, err := a.claimKeep(ctx, a.Keep, "t1"); !won || err != nil {
		t.Fatalf("a's claim: won %v, %v", won, err)
	}
	if _, _, won, err := b.claimKeep(ctx, b.Keep, "t1"); won || err != nil {
		t.Fatalf("b claimed a copy that a holds: won %v, %v", won, err)
	}
	clock.add(a.Keep.Lease + time.Millisecond)
	if _, _, won, err := b.claimKeep(ctx, b.Keep, "t1"); !won || err != nil {
		t.Fatalf("b's claim after a's lease ran out: won %v, %v", won, err)
	}
	stored, err := a.keepDone(ctx, a.Keep, "t1", "a", func(j *keepJob) { j.Kept, j.Video = true, "results/t1-x/video.mp4" })
	if err != nil || stored.Finished {
		t.Fatalf("a, whose lease was taken over, finished the task: %+v, %v", stored, err)
	}
	stored, err = b.keepDone(ctx, b.Keep, "t1", "b", func(j *keepJob) { j.Kept, j.Video = true, "results/t1-x/video.mp4" })
	if err != nil || !stored.Finished || stored.Status != StatusSucceeded {
		t.Fatalf("b's outcome: %+v, %v", stored, err)
	}
	if !strings.Contains(string(stored.Result), `"video_url":"http://127.0.0.1:1/b/results/t1-x/video.mp4"`) {
		t.Fatalf("the kept answer is %s", stored.Result)
	}
	again, err := b.keepDone(ctx, b.Keep, "t1", "b", func(j *keepJob) { j.Kept = true })
	if err != nil || again.Version != stored.Version {
		t.Fatalf("a second outcome changed the finished task: %+v, %v", again, err)
	}
}

// A copy still pending when keep_results leaves the config ends with the provider's result.
func TestKeepPendingWithoutKeeperEnds(t *testing.T) {
	clock := newKeepClock()
	h, up := newKeepingHandler(t, clock)
	h.Keep.Attempts = 100
	serve(h, "POST", createPath, createBody)
	serve(h, "GET", createPath+"/cgt-kept", "")
	if !keepPending(mustTask(t, h.Store, "cgt-kept")) {
		t.Fatal("the success was not held for keeping")
	}
	h.Keep.Stop()
	h.Keep = nil
	clock.add(time.Hour)
	got := decode(t, serve(h, "GET", createPath+"/cgt-kept", ""))
	if got["status"] != "succeeded" || got["content"].(map[string]any)["video_url"] != up.URL+"/files/gone.mp4" {
		t.Fatalf("without a Keeper the task answers %v", got)
	}
}

func TestKeepBackoffAndExtensions(t *testing.T) {
	for attempts, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 4: 16 * time.Second, 9: 5 * time.Minute, 60: 5 * time.Minute} {
		if got := keepBackoff(attempts); got != want {
			t.Errorf("keepBackoff(%d) = %s, want %s", attempts, got, want)
		}
	}
	for ct, want := range map[string]string{"video/mp4": ".mp4", "Video/MP4; codecs=avc1": ".mp4", "image/png": ".png", "text/html": "", "": ""} {
		if got := extensionOf(ct); got != want {
			t.Errorf("extensionOf(%q) = %q, want %q", ct, got, want)
		}
	}
	for ct, want := range map[string]string{
		"video/mp4": "video/mp4", "Video/MP4; codecs=avc1": "video/mp4", "image/webp": "image/webp",
		"text/html; charset=utf-8": "application/octet-stream", "image/svg+xml": "application/octet-stream",
		"application/xhtml+xml": "application/octet-stream", "": "application/octet-stream",
	} {
		if got := keptType(ct); got != want {
			t.Errorf("keptType(%q) = %q, want %q", ct, got, want)
		}
	}
}

func mustTask(t *testing.T, s storage.Store, id string) storage.Task {
	t.Helper()
	rec, err := s.Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A source that sends nothing for a lease fails the attempt (the copy's slot is not held for
// ever by a provider that stalls): the lease is given back and a retry is scheduled.
func TestKeepStalledSourceFailsTheAttempt(t *testing.T) {
	clock := newKeepClock()
	release := make(chan struct{})
	defer close(release)
	var up *fakeUpstream
	up = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			writeJSON(w, map[string]string{"id": "cgt-stall"})
		case r.URL.Path == "/files/stall.mp4":
			w.Header().Set("Content-Length", "1000000")
			_, _ = w.Write(make([]byte, 1000)) // a test fake: a failed write shows as a short body
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			writeJSON(w, map[string]any{"id": "cgt-stall", "model": "m", "status": "succeeded",
				"content": map[string]string{"video_url": up.URL + "/files/stall.mp4"}})
		}
	})
	h := newHandler(t, up.URL, nil)
	h.Now = clock.now
	h.Keep = &Keeper{Bucket: unreachableBucket(t), Lease: 300 * time.Millisecond}
	serve(h, "POST", createPath, createBody)
	serve(h, "GET", createPath+"/cgt-stall", "")
	waitUntil(t, "the stalled attempt to fail", func() bool {
		j := keepJobIn(t, h.Store, "cgt-stall")
		return j.Attempts == 1 && j.Owner == "" && j.NextAt > 0
	})
	if rec := mustTask(t, h.Store, "cgt-stall"); rec.Status != StatusRunning || rec.Finished {
		t.Fatalf("after one failed attempt of %d the task is %s (finished %v)", DefaultKeepAttempts, rec.Status, rec.Finished)
	}
}

// A copy stopped with its Keeper (a reload) gives its lease and its attempt back: it is due
// again at once, and reloads during a long copy do not use up the attempts.
func TestKeepStoppedCopyGivesItsAttemptBack(t *testing.T) {
	clock := newKeepClock()
	release := make(chan struct{})
	defer close(release)
	reading := make(chan struct{}, 1)
	var up *fakeUpstream
	up = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			writeJSON(w, map[string]string{"id": "cgt-slow"})
		case r.URL.Path == "/files/slow.mp4":
			w.Header().Set("Content-Length", "1000000")
			_, _ = w.Write(make([]byte, 1000)) // a test fake: a failed write shows as a short body
			w.(http.Flusher).Flush()
			select {
			case reading <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			writeJSON(w, map[string]any{"id": "cgt-slow", "model": "m", "status": "succeeded",
				"content": map[string]string{"video_url": up.URL + "/files/slow.mp4"}})
		}
	})
	h := newHandler(t, up.URL, nil)
	h.Now = clock.now
	h.Keep = &Keeper{Bucket: unreachableBucket(t), Lease: time.Minute, Attempts: 1}
	serve(h, "POST", createPath, createBody)
	serve(h, "GET", createPath+"/cgt-slow", "")
	select {
	case <-reading:
	case <-time.After(10 * time.Second):
		t.Fatal("the copy did not start")
	}
	if j := keepJobIn(t, h.Store, "cgt-slow"); j.Attempts != 1 || j.Owner == "" {
		t.Fatalf("the running copy's job: %+v", j)
	}
	h.Keep.Stop()
	waitUntil(t, "the stopped copy to give its lease back", func() bool {
		return keepJobIn(t, h.Store, "cgt-slow").Owner == ""
	})
	j := keepJobIn(t, h.Store, "cgt-slow")
	if rec := mustTask(t, h.Store, "cgt-slow"); j.Attempts != 0 || j.NextAt != 0 || !j.pending() || rec.Status != StatusRunning || rec.Finished {
		t.Fatalf("after a stop (Attempts 1) the job has attempts %d, next_at %d, pending %v, and the task is %s (finished %v); want pending, due now, no attempt used",
			j.Attempts, j.NextAt, j.pending(), rec.Status, rec.Finished)
	}
}
