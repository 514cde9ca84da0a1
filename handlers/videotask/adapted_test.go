package videotask

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// dashUpstream answers DashScope's create with a task id and every read with the status it
// holds (and, for SUCCEEDED, a video and its usage).
type dashUpstream struct {
	mu     sync.Mutex
	status string
}

func (d *dashUpstream) set(s string) { d.mu.Lock(); d.status = s; d.mu.Unlock() }

func newDashHandler(t *testing.T, d *dashUpstream) *Handler {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"PENDING"},"request_id":"r"}`)
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.status == "SUCCEEDED" {
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"SUCCEEDED","video_url":"https://v.example/x.mp4"},"usage":{"video_duration":5,"video_ratio":"1920*1080"}}`)
			return
		}
		io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"`+d.status+`"}}`)
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + "/api/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "wan", BaseURL: base, APIKey: "k", Protocol: adaptor.DashScope, Models: []string{"wan"}}})
	if err != nil {
		t.Fatal(err)
	}
	return &Handler{Catalog: cat, Store: openBadger(t), Client: &http.Client{Timeout: 5 * time.Second}, RefreshInterval: time.Nanosecond, Logger: zap.NewNop()}
}

// TestAdaptedUnknownStateExpires: a provider state that no rule maps keeps the task running
// until its execution_expires_after, then the task is expired, once; the clock is the handler's.
func TestAdaptedUnknownStateExpires(t *testing.T) {
	d := &dashUpstream{status: "UNKNOWN"}
	h := newDashHandler(t, d)
	clock := time.Unix(1_800_000_000, 0)
	h.Now = clockAt(&clock)
	w := serve(h, "POST", createPath, `{"model":"wan","execution_expires_after":3600,"content":[{"type":"text","text":"hi"}]}`)
	if w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	id := decode(t, w)["id"].(string)
	rec, err := h.Store.Task(context.Background(), id)
	if err != nil || rec.UpstreamID != "ds-1" || !strings.HasPrefix(id, "cgt-") || !strings.Contains(string(rec.Request), `"execution_expires_after":3600`) {
		t.Fatalf("record %+v, %v", rec, err)
	}
	clock = clock.Add(59 * time.Minute)
	if got := decode(t, serve(h, "GET", createPath+"/"+id, "")); got["status"] != StatusRunning || got["error"] != nil {
		t.Fatalf("within execution_expires_after: %v", got)
	}
	clock = clock.Add(2 * time.Minute)
	got := decode(t, serve(h, "GET", createPath+"/"+id, ""))
	if got["status"] != StatusExpired || got["error"].(map[string]any)["code"] != "task_expired" {
		t.Fatalf("past execution_expires_after: %v", got)
	}
	if rec, _ := h.Store.Task(context.Background(), id); !rec.Finished {
		t.Fatalf("record not finished: %+v", rec)
	}
}

// TestAdaptedUsage: a succeeded task's record carries its adaptor's usage, which TaskUsage (the
// billing hook) gives back; an unfinished task has none. An Ark task's usage is read from its
// answer.
func TestAdaptedUsage(t *testing.T) {
	d := &dashUpstream{status: "RUNNING"}
	h := newDashHandler(t, d)
	id := decode(t, serve(h, "POST", createPath, `{"model":"wan","content":[{"type":"text","text":"hi"}]}`))["id"].(string)
	serve(h, "GET", createPath+"/"+id, "")
	rec, _ := h.Store.Task(context.Background(), id)
	if _, ok := TaskUsage(rec); ok {
		t.Fatalf("usage of a running task: %+v", rec)
	}
	d.set("SUCCEEDED")
	got := decode(t, serve(h, "GET", createPath+"/"+id, ""))
	if got["status"] != StatusSucceeded || got["resolution"] != "1080p" || got["ratio"] != "16:9" || got["duration"] != 5.0 {
		t.Fatalf("answer %v", got)
	}
	rec, _ = h.Store.Task(context.Background(), id)
	u, ok := TaskUsage(rec)
	if !ok || u.VideoSeconds != 5 || u.Resolution != "1080p" || u.Ratio != "16:9" || u.Width != 1920 || u.Height != 1080 {
		t.Fatalf("usage %+v %v", u, ok)
	}
	ark := storage.Task{Status: StatusSucceeded, Result: json.RawMessage(`{"duration":10,"resolution":"720p","ratio":"9:16","usage":{"completion_tokens":108900}}`)}
	if u, ok := TaskUsage(ark); !ok || u.VideoSeconds != 10 || u.Resolution != "720p" || u.VideoTokens != 108900 {
		t.Fatalf("ark usage %+v %v", u, ok)
	}
}

// TestAdaptedFailureMessageRedacted: a failed task's message from the provider reaches the
// client (and the record) without the upstream's key, as a refusal's does.
func TestAdaptedFailureMessageRedacted(t *testing.T) {
	const key = "dash-operator-key-8271"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"PENDING"},"request_id":"r"}`)
			return
		}
		io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"FAILED","code":"InvalidApiKey","message":"key `+key+` has no access to wan"}}`)
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + "/api/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "wan", BaseURL: base, APIKey: key, Protocol: adaptor.DashScope, Models: []string{"wan"}}})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Catalog: cat, Store: openBadger(t), Client: &http.Client{Timeout: 5 * time.Second}, RefreshInterval: time.Nanosecond, Logger: zap.NewNop()}
	id := decode(t, serve(h, "POST", createPath, `{"model":"wan","content":[{"type":"text","text":"hi"}]}`))["id"].(string)
	w := serve(h, "GET", createPath+"/"+id, "")
	got := decode(t, w)
	e, _ := got["error"].(map[string]any)
	if got["status"] != StatusFailed || e == nil || strings.Contains(w.Body.String(), key) || !strings.Contains(e["message"].(string), "has no access to wan") {
		t.Fatalf("failed task answer: %s", w.Body)
	}
	if rec, _ := h.Store.Task(context.Background(), id); strings.Contains(string(rec.Result), key) {
		t.Fatalf("the record keeps the key: %s", rec.Result)
	}
}

// TestThrottledByReadsDateByBoardClock: a 429's Retry-After date pauses the upstream until that
// date on the health board's clock, the one the pause is measured on, whatever the handler's.
func TestThrottledByReadsDateByBoardClock(t *testing.T) {
	base, _ := url.Parse("https://provider.example/api/v3")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: base, APIKey: "k", Models: []string{"m"}}})
	if err != nil {
		t.Fatal(err)
	}
	boardNow := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	board := providers.NewBoard()
	board.Now = func() time.Time { return boardNow }
	cat.WithHealth(board)
	p, _ := cat.Provider("p")
	u := p.Upstreams[0]
	handlerNow := boardNow.Add(-time.Hour)
	h := &Handler{Catalog: cat, Now: clockAt(&handlerNow), Logger: zap.NewNop()}
	header := http.Header{"Retry-After": {boardNow.Add(30 * time.Second).Format(http.TimeFormat)}}
	if !h.throttledBy(u, upstream.Answer{Status: http.StatusTooManyRequests, Header: header}) {
		t.Fatal("a 429 was not throttled")
	}
	if got, want := u.PausedUntil(), boardNow.Add(30*time.Second); !got.Equal(want) {
		t.Fatalf("paused until %v, want %v", got, want)
	}
}
