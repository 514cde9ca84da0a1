package videotask

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

// A relay token lets whoever holds it (the upstream, and anyone who sees its callbacks) ask
// for a task to be read again, without an API key. A flood of such hints must not become a
// flood of upstream reads made with the operator's credential: like client polls, hints lead to
// at most one read of a task per refresh interval. A hint that comes right after a read is not
// dropped but answered by one read when the interval ends, so the last state is still seen.
func TestRelayHintsReadATaskAtMostOncePerInterval(t *testing.T) {
	var gets atomic.Int64
	var status atomic.Value
	status.Store("running")
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		io.WriteString(w, `{"id":"cgt-relay","model":"m","status":"`+status.Load().(string)+`","content":{"video_url":"https://cdn.example.com/v.mp4"},"created_at":100,"updated_at":200}`)
	})
	h := newHandler(t, up.URL, nil)
	h.RefreshInterval = 500 * time.Millisecond
	h.Client.Timeout = 5 * time.Second
	ctx := context.Background()
	if _, err := h.Store.CreateTask(ctx, storage.Task{ID: "cgt-relay", Kind: storage.KindVideo, Account: "acme", Provider: "p", Model: "m",
		Status: StatusQueued, CreatedAt: time.Now().Unix(), UpdatedAt: time.Now().Unix()}); err != nil {
		t.Fatal(err)
	}
	h.rememberRelay(ctx, "tok", "cgt-relay")
	hint := func() {
		r := httptest.NewRequest(http.MethodPost, RelayPath+"tok", nil)
		w := httptest.NewRecorder()
		h.ServeRelay(w, r, RelayToken(r.URL.Path))
		if w.Code != http.StatusOK {
			t.Fatalf("relay answered %d %s", w.Code, w.Body)
		}
	}
	stored := func() string {
		got, err := h.Store.Task(ctx, "cgt-relay")
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	hint()
	waitFor("the first hint's read", func() bool { return stored() == "running" })
	start := time.Now()
	for range 300 {
		hint()
	}
	// The upstream's last word comes right after a read: its hint is answered when the
	// interval ends.
	status.Store("succeeded")
	hint()
	waitFor("the last state", func() bool { return stored() == "succeeded" })
	// 302 hints within about one interval: the first read, and one when the interval ended.
	if n, elapsed := gets.Load(), time.Since(start); n > 2+int64(elapsed/h.RefreshInterval) {
		t.Fatalf("302 relay hints in %v made %d upstream reads; want at most one per %v", elapsed, n, h.RefreshInterval)
	}
}

// An upstream that refuses every read (429) stores nothing, so the task's last read is not in
// its record: relay hints must still read it at most once per interval.
func TestRelayHintsWaitAfterAFailedRead(t *testing.T) {
	var gets atomic.Int64
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"code":"rate_limited","message":"slow down"}}`)
	})
	h := newHandler(t, up.URL, nil)
	h.RefreshInterval = 400 * time.Millisecond
	ctx := context.Background()
	if _, err := h.Store.CreateTask(ctx, storage.Task{ID: "cgt-relay-429", Kind: storage.KindVideo, Account: "acme", Provider: "p", Model: "m",
		Status: StatusQueued, CreatedAt: time.Now().Unix(), UpdatedAt: time.Now().Unix()}); err != nil {
		t.Fatal(err)
	}
	h.rememberRelay(ctx, "tok-429", "cgt-relay-429")
	start := time.Now()
	for time.Since(start) < 1200*time.Millisecond {
		r := httptest.NewRequest(http.MethodPost, RelayPath+"tok-429", nil)
		w := httptest.NewRecorder()
		h.ServeRelay(w, r, RelayToken(r.URL.Path))
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a read started at the end is counted
	if n, elapsed := gets.Load(), time.Since(start); n < 1 || n > 2+int64(elapsed/h.RefreshInterval) {
		t.Fatalf("hints for %v against a refusing upstream made %d reads; want one per %v", elapsed, n, h.RefreshInterval)
	}
}
