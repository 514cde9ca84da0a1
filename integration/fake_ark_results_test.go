package integration

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// arkResults is a fake Ark task upstream (BytePlus ModelArk's content generation task API: create
// POST …/contents/generations/tasks answering {"id"}, query GET …/tasks/{id}) whose tasks are
// running at their first query and succeeded after, with a video and a last frame it serves
// itself, as the provider's short-lived result URLs. Every task call (create, query, list) must
// carry Authorization: Bearer ark-key. A video download can be made to stall midway
// (stallNext), as a slow provider's does.
type arkResults struct {
	*httptest.Server
	video, frame []byte
	mu           sync.Mutex
	reads        map[string]int
	n            int
	// stallNext makes the next video download send its first MiB and then nothing until
	// release is closed (or the gateway hangs up).
	stallNext atomic.Bool
	stalled   chan struct{}
	release   chan struct{}
	downloads atomic.Int32
	// unsized sends the video without a Content-Length (chunked), as a source that does not say
	// how much it will send.
	unsized atomic.Bool
	// frameType is the Content-Type of the last frame (under mu); default image/png.
	frameType string
	// moreContent are members the succeeded answer's content carries besides its URLs (under
	// mu): what a newer or hostile provider adds.
	moreContent map[string]any
	// videoURL, when set (under mu), is the succeeded answer's video_url instead of the fake's
	// own video; movedTo is where the fake's /files/moved.mp4 redirects (302), counted in moved.
	videoURL, movedTo string
	moved             atomic.Int32
	// dripping counts the downloads of /files/drip.mp4, which announces 1 MiB and sends one
	// byte every 200 ms: a slow (or hostile) source that never stalls.
	dripping atomic.Int32
}

func newArkResults(t *testing.T, videoSize int) *arkResults {
	f := &arkResults{video: randomBytes(t, videoSize), frame: randomBytes(t, 70_000), reads: map[string]int{},
		stalled: make(chan struct{}), release: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *arkResults) serve(w http.ResponseWriter, r *http.Request) {
	const tasks = "/api/v3/contents/generations/tasks"
	if strings.HasPrefix(r.URL.Path, tasks) && r.Header.Get("Authorization") != "Bearer ark-key" {
		writeFakeJSON(w, 401, map[string]any{"error": map[string]string{"code": "AuthenticationError", "message": "bad key"}})
		return
	}
	switch {
	case r.URL.Path == "/files/video.mp4" && r.Method == http.MethodGet:
		f.downloads.Add(1)
		w.Header().Set("Content-Type", "video/mp4")
		if !f.unsized.Load() {
			w.Header().Set("Content-Length", fmt.Sprint(len(f.video)))
		}
		if f.stallNext.CompareAndSwap(true, false) {
			_, _ = w.Write(f.video[:1<<20]) // a test fake: a failed write shows as a short body
			w.(http.Flusher).Flush()
			close(f.stalled)
			select {
			case <-f.release:
			case <-r.Context().Done():
			}
			return // a short body: the copy must not count it as the video
		}
		_, _ = w.Write(f.video) // a test fake: a failed write shows as a short body
	case r.URL.Path == "/files/drip.mp4" && r.Method == http.MethodGet:
		f.dripping.Add(1)
		w.Header().Set("Content-Type", "video/mp4")
		w.Header().Set("Content-Length", fmt.Sprint(1<<20))
		for {
			if _, err := w.Write([]byte{0}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	case r.URL.Path == "/files/moved.mp4" && r.Method == http.MethodGet:
		f.moved.Add(1)
		f.mu.Lock()
		to := f.movedTo
		f.mu.Unlock()
		http.Redirect(w, r, to, http.StatusFound)
	case r.URL.Path == "/files/last.png" && r.Method == http.MethodGet:
		f.mu.Lock()
		frameType := cmp.Or(f.frameType, "image/png")
		f.mu.Unlock()
		w.Header().Set("Content-Type", frameType)
		_, _ = w.Write(f.frame) // a test fake: a failed write shows as a short body
	case r.URL.Path == tasks && r.Method == http.MethodPost:
		f.mu.Lock()
		f.n++
		id := fmt.Sprintf("cgt-keep-%d", f.n)
		f.mu.Unlock()
		writeFakeJSON(w, 200, map[string]string{"id": id})
	case strings.HasPrefix(r.URL.Path, tasks+"/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(r.URL.Path, tasks+"/")
		f.mu.Lock()
		f.reads[id]++
		n := f.reads[id]
		f.mu.Unlock()
		writeFakeJSON(w, 200, f.task(id, n))
	case r.URL.Path == tasks && r.Method == http.MethodGet:
		var items []map[string]any
		for _, id := range r.URL.Query()["filter.task_ids"] {
			f.mu.Lock()
			f.reads[id]++
			n := f.reads[id]
			f.mu.Unlock()
			items = append(items, f.task(id, n))
		}
		writeFakeJSON(w, 200, map[string]any{"items": items, "total": len(items)})
	default:
		writeFakeJSON(w, 404, map[string]any{"error": map[string]string{"code": "NotFound", "message": "no such endpoint"}})
	}
}

// task is the query answer of a task at its n-th read.
func (f *arkResults) task(id string, n int) map[string]any {
	t := map[string]any{"id": id, "model": "seedance-keep", "status": "running", "created_at": 1764200000, "updated_at": 1764200000}
	if n > 1 {
		t["status"] = "succeeded"
		content := map[string]any{"video_url": f.URL + "/files/video.mp4", "last_frame_url": f.URL + "/files/last.png"}
		f.mu.Lock()
		if f.videoURL != "" {
			content["video_url"] = f.videoURL
		}
		for k, v := range f.moreContent {
			content[k] = v
		}
		f.mu.Unlock()
		t["content"] = content
		t["usage"] = map[string]int{"completion_tokens": 108900, "total_tokens": 108900}
		t["updated_at"] = 1764200060
	}
	return t
}
