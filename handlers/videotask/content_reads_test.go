package videotask

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// hailuo is MiniMax's video API as its reference describes it, reduced to one task: created,
// then Success with a file id, whose download address it serves; while limited is set, each read
// answers HTTP 200 with base_resp.status_code 1002 (MiniMax's rate limit).
type hailuo struct {
	mu      sync.Mutex
	reads   int
	limited bool
}

func (m *hailuo) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case r.URL.Path == "/cdn/file-1.mp4":
		io.WriteString(w, "video bytes")
	case r.Method == http.MethodPost:
		io.WriteString(w, `{"task_id":"106916112200001","base_resp":{"status_code":0,"status_msg":"success"}}`)
	case m.limited:
		m.reads++
		io.WriteString(w, `{"base_resp":{"status_code":1002,"status_msg":"rate limit exceeded(RPM)"}}`)
	case strings.HasSuffix(r.URL.Path, "/query/video_generation"):
		m.reads++
		io.WriteString(w, `{"task_id":"106916112200001","status":"Success","file_id":"file-1","video_width":1280,"video_height":720,"base_resp":{"status_code":0,"status_msg":"success"}}`)
	default:
		m.reads++
		io.WriteString(w, `{"file":{"file_id":"file-1","download_url":"http://`+r.Host+`/cdn/file-1.mp4"},"base_resp":{"status_code":0,"status_msg":"success"}}`)
	}
}

func (m *hailuo) readCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

// MiniMax answers its rate limit inside an HTTP 200 (status_code 1002). Met by a content read,
// it is the 429 it stands for: the client gets 429 with a Retry-After, and the upstream pauses,
// so that a poll of the task right after reads nothing (the stored answer is served).
func TestContentRateLimitInA200PausesTheUpstream(t *testing.T) {
	m := &hailuo{}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + "/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "hailuo", Protocol: adaptor.MiniMax, Models: []string{"m"},
		Upstreams: []*providers.Upstream{{Name: "a", BaseURL: base, APIKey: "upstream-secret"}}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	board := providers.NewBoard()
	board.Now = clockAt(&now)
	cat.WithHealth(board)
	p, _ := cat.Provider("hailuo")
	u := p.Upstreams[0]
	h := &Handler{Catalog: cat, Store: openBadger(t), Client: &http.Client{Timeout: 5 * time.Second},
		RefreshInterval: time.Nanosecond, Now: clockAt(&now), Logger: zap.NewNop()}

	w := serveAccount(h, "alice", http.MethodPost, createPath, `{"model":"m","content":[{"type":"text","text":"hi"}]}`)
	id, _ := decode(t, w)["id"].(string)
	if w.Code != http.StatusOK || id == "" {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w = serveAccount(h, "alice", http.MethodGet, createPath+"/"+id, ""); !strings.Contains(w.Body.String(), `"succeeded"`) {
		t.Fatalf("poll: %d %s", w.Code, w.Body)
	}
	if w = serveAccount(h, "alice", http.MethodGet, createPath+"/"+id+"/content", ""); w.Code != http.StatusOK || w.Body.String() != "video bytes" {
		t.Fatalf("content: %d %s", w.Code, w.Body)
	}

	m.mu.Lock()
	m.limited = true
	m.mu.Unlock()
	now = now.Add(time.Minute) // a fresh second of max_rps, whatever the reads before
	w = serveAccount(h, "alice", http.MethodGet, createPath+"/"+id+"/content", "")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("content met by MiniMax's 1002 = %d (Retry-After %q) %s; want 429 with a Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if !u.PausedUntil().After(now) {
		t.Fatal("MiniMax's 1002 to a content read did not pause the upstream")
	}
	before := m.readCount()
	serveAccount(h, "alice", http.MethodGet, createPath+"/"+id+"/content", "")
	if n := m.readCount() - before; n != 0 {
		t.Fatalf("%d calls reached MiniMax within the pause its 1002 asked for", n)
	}
}

// A looked-up address is reused only while its signature says it is valid (ten seconds before
// its end at most, and five minutes at most); an address that says nothing is not reused.
func TestContentAddressReusedWhileItsSignatureLasts(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		address string
		want    time.Duration // 0: not reused
	}{
		{"https://cdn.example/v.mp4?sig=signed", 0},
		{"https://cdn.example/v.mp4?Expires=" + itoa(now.Add(time.Hour).Unix()) + "&Signature=x", maxContentReuse},
		{"https://cdn.example/v.mp4?Expires=" + itoa(now.Add(time.Minute).Unix()), 50 * time.Second},
		{"https://cdn.example/v.mp4?Expires=" + itoa(now.Add(5*time.Second).Unix()), 0},
		{"https://cdn.example/v.mp4?Expires=-4", 0},
		{"https://cdn.example/v.mp4?Expires=abc", 0},
		{"https://s3.example/v.mp4?X-Amz-Date=20261130T115930Z&X-Amz-Expires=120&X-Amz-Signature=x", 80 * time.Second},
		{"https://s3.example/v.mp4?X-Amz-Date=20261130T115930Z&X-Amz-Expires=20", 0},
		{"https://gcs.example/v.mp4?X-Goog-Date=20261130T120000Z&X-Goog-Expires=86400", maxContentReuse},
		{"https://s3.example/v.mp4?X-Amz-Date=bad&X-Amz-Expires=120", 0},
	} {
		until, ok := reusableUntil(c.address, now)
		switch {
		case c.want == 0 && ok:
			t.Errorf("%s is reused until %v; want not reused", c.address, until)
		case c.want > 0 && (!ok || until.Sub(now) != c.want):
			t.Errorf("%s is reused for %v (%v); want %v", c.address, until.Sub(now), ok, c.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// An account makes one content lookup at a time at an upstream: while mallory's lookup runs,
// her next waits its turn, and alice's goes at once.
func TestContentLookupsTakeTurnsPerAccount(t *testing.T) {
	var b turnBoard
	b.turns = map[turnKey]*turn{}
	u := &providers.Upstream{Name: "a"}
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_ = b.with(context.Background(), u, "mallory", func() error { close(started); <-release; return nil })
	}()
	<-started
	second := make(chan struct{})
	go func() {
		_ = b.with(context.Background(), u, "mallory", func() error { close(second); return nil })
	}()
	ran := false
	if err := b.with(context.Background(), u, "alice", func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("alice's lookup beside mallory's: %v (ran %v)", err, ran)
	}
	select {
	case <-second:
		t.Fatal("mallory's second lookup ran beside her first")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("mallory's second lookup did not run after her first ended")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		n := len(b.turns)
		b.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d turns kept after every lookup ended", n)
		}
	}
}
