package videotask

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// newDrippingHandler is a handler on the clock now with keep (its Bucket one that is never
// reached) whose upstream's task is succeeded with a video on its own origin that announces
// 1 MiB and sends one byte every 50 ms: a source that always makes progress, so the stall check
// never ends it. It answers the video's URL too.
func newDrippingHandler(t *testing.T, keep *Keeper, now func() time.Time) (*Handler, string) {
	var up *fakeUpstream
	up = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			writeJSON(w, map[string]string{"id": "cgt-drip"})
		case r.URL.Path == "/files/drip.mp4":
			w.Header().Set("Content-Type", "video/mp4")
			w.Header().Set("Content-Length", "1048576")
			w.WriteHeader(200)
			for {
				if _, err := w.Write([]byte{0}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		case strings.HasPrefix(r.URL.Path, "/api/v3/"+TasksPath+"/"):
			writeJSON(w, map[string]any{"id": "cgt-drip", "model": "m", "status": "succeeded",
				"content": map[string]string{"video_url": up.URL + "/files/drip.mp4"}})
		default:
			http.NotFound(w, r)
		}
	})
	h := newHandler(t, up.URL, nil)
	h.Now = now
	keep.Bucket = unreachableBucket(t)
	h.Keep = keep
	t.Cleanup(h.Keep.Stop)
	return h, up.URL + "/files/drip.mp4"
}

// A source that sends, but less than min_rate over a lease, and a copy that runs past max_time,
// fail the attempt; after the last attempt the task ends succeeded with the provider's result.
// So a dripping source holds a copy slot for a lease (or max_time), not for the hours its
// announced size takes at a byte a time.
func TestKeepSlowCopyFailsTheAttempt(t *testing.T) {
	for name, keep := range map[string]*Keeper{
		"under the default min_rate": {Attempts: 1, Lease: 600 * time.Millisecond},
		"past max_time":              {Attempts: 1, Lease: time.Minute, MinRate: 1, MaxTime: 700 * time.Millisecond},
		"under min_rate 100":         {Attempts: 1, Lease: 600 * time.Millisecond, MinRate: 100},
	} {
		t.Run(name, func(t *testing.T) {
			h, _ := newDrippingHandler(t, keep, newKeepClock().now)
			if w := serve(h, "POST", createPath, createBody); w.Code != 200 {
				t.Fatalf("create = %d %s", w.Code, w.Body)
			}
			start := time.Now()
			serve(h, "GET", createPath+"/cgt-drip", "")
			waitUntil(t, "the slow copy to be given up", func() bool { return keepJobIn(t, h.Store, "cgt-drip").GaveUp })
			if took := time.Since(start); took > 4*time.Second {
				t.Fatalf("the slow copy was given up after %v", took)
			}
			if got := decode(t, serve(h, "GET", createPath+"/cgt-drip", "")); got["status"] != "succeeded" {
				t.Fatalf("after its copy was given up the task answers %v; want succeeded", got)
			}
		})
	}
}
