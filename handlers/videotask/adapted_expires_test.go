package videotask

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
)

// TestAdaptedRunningExpires: a DashScope task that its provider reports RUNNING at every read
// (stuck at the provider), created with execution_expires_after 3600, reads running within it
// and expired (task_expired, its record finished) past it. No adaptor can send the field, so the
// gateway keeps it (docs/api.md: expired is "Not finished within execution_expires_after").
func TestAdaptedRunningExpires(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"PENDING"},"request_id":"r"}`)
			return
		}
		io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"RUNNING"},"request_id":"r"}`)
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
	if got := decode(t, serve(h, "GET", createPath+"/"+id, "")); got["status"] != StatusRunning {
		t.Fatalf("within execution_expires_after: %v", got)
	}
	clock = clock.Add(3 * time.Hour)
	got := decode(t, serve(h, "GET", createPath+"/"+id, ""))
	if got["status"] != StatusExpired {
		t.Fatalf("two hours past its execution_expires_after (3600 s) the task reads %v; want expired", got["status"])
	}
	if code := got["error"].(map[string]any)["code"]; code != "task_expired" {
		t.Fatalf("expired with code %v; want task_expired", code)
	}
	if rec, err := h.Store.Task(t.Context(), id); err != nil || !rec.Finished || rec.Status != StatusExpired {
		t.Fatalf("record after the expiry: %+v, %v; want finished, expired", rec, err)
	}
}
