package videotask

import (
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
)

// TestQueuedPastItsDeadlineIsCancelledUpstream: a DashScope task still PENDING (queued at the
// provider, the one state DashScope cancels) past its execution_expires_after, which its owner
// cancels (DELETE). The read inside the cancel expires it (released, terminal); the expiry asks
// the provider to cancel it first, so that the queued video is not run later and billed for a
// task the gateway released (docs/api.md: "A queued task is cancelled"). Without that, no
// cancel reached the provider.
func TestQueuedPastItsDeadlineIsCancelledUpstream(t *testing.T) {
	var cancels atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
			cancels.Add(1)
			io.WriteString(w, `{"request_id":"r"}`)
		case r.Method == http.MethodPost:
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"PENDING"},"request_id":"r"}`)
		case cancels.Load() > 0:
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"CANCELED"}}`)
		default:
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"PENDING"}}`)
		}
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
	clock = clock.Add(2 * time.Hour)
	w = serve(h, "DELETE", createPath+"/"+id, "")
	if cancels.Load() == 0 {
		t.Fatalf("DELETE of a task DashScope still holds PENDING (past its execution_expires_after) = %d %s, and no "+
			"POST tasks/{id}/cancel reached DashScope: the queued video will run and be billed to the operator", w.Code, w.Body)
	}
}
