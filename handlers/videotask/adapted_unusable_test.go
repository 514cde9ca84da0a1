package videotask

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// TestAdaptedUnusableAnswerExpires: a DashScope answer whose task_status is a number (a member
// the adaptor needs, of another type) makes each poll 502 invalid_response naming the member,
// with the task unchanged, until its execution_expires_after; then the task expires with the
// code invalid_response, once, and is no longer read. The clock is the handler's.
func TestAdaptedUnusableAnswerExpires(t *testing.T) {
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"PENDING"},"request_id":"r"}`)
			return
		}
		reads.Add(1)
		io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":3},"usage":{"video_duration":"long"}}`)
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + "/api/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "wan", BaseURL: base, APIKey: "k", Protocol: adaptor.DashScope, Models: []string{"wan"}}})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Catalog: cat, Store: openBadger(t), Client: &http.Client{Timeout: 5 * time.Second}, RefreshInterval: time.Nanosecond, Logger: zap.NewNop()}
	clock := time.Unix(1_800_000_000, 0)
	h.Now = clockAt(&clock)
	w := serve(h, "POST", createPath, `{"model":"wan","execution_expires_after":3600,"content":[{"type":"text","text":"hi"}]}`)
	if w.Code != 200 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	id := decode(t, w)["id"].(string)
	clock = clock.Add(59 * time.Minute)
	w = serve(h, "GET", createPath+"/"+id, "")
	if got := decode(t, w); w.Code != http.StatusBadGateway || got["code"] != "invalid_response" || !strings.Contains(got["message"].(string), "output.task_status") {
		t.Fatalf("within execution_expires_after: %d %v", w.Code, got)
	}
	if rec, _ := h.Store.Task(context.Background(), id); rec.Finished || rec.Status == StatusFailed {
		t.Fatalf("the record changed: %+v", rec)
	}
	clock = clock.Add(2 * time.Minute)
	got := decode(t, serve(h, "GET", createPath+"/"+id, ""))
	if got["status"] != StatusExpired || got["error"].(map[string]any)["code"] != "invalid_response" {
		t.Fatalf("past execution_expires_after: %v", got)
	}
	before := reads.Load()
	if again := decode(t, serve(h, "GET", createPath+"/"+id, "")); again["status"] != StatusExpired || reads.Load() != before {
		t.Fatalf("after expiry: %v, %d more reads", again, reads.Load()-before)
	}
}

// TestAdaptedUnusableCreateAnswer: a MiniMax create answered 200 with its task_id a number (the
// reference gives a string) is the create's 502 invalid_response, as any unreadable create
// answer is, not an internal error; nothing is stored.
func TestAdaptedUnusableCreateAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"task_id":106916112212032,"base_resp":{"status_code":0,"status_msg":"success"}}`)
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + "/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "hailuo", BaseURL: base, APIKey: "k", Protocol: adaptor.MiniMax, Models: []string{"hailuo"}}})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Catalog: cat, Store: openBadger(t), Client: &http.Client{Timeout: 5 * time.Second}, Logger: zap.NewNop()}
	w := serve(h, http.MethodPost, createPath, `{"model":"hailuo","content":[{"type":"text","text":"hi"}]}`)
	if m := decode(t, w); w.Code != http.StatusBadGateway || m["code"] != "invalid_response" {
		t.Fatalf("create = %d %s; want 502 invalid_response", w.Code, w.Body)
	}
	if page, err := h.Store.SearchTasks(context.Background(), "acme", storage.TaskSearch{Limit: 10}); err != nil || len(page.Tasks) != 0 {
		t.Fatalf("tasks stored: %+v, %v", page.Tasks, err)
	}
}
