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

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestReviewExpiryOfAQueuedTaskThatEndedMeanwhile: a DashScope task read PENDING past its
// execution_expires_after is cancelled by the expiry's winner. DashScope refuses the cancel of a
// task that is no longer PENDING: here it failed (or was cancelled by its client) between the
// read and the cancel, and reads FAILED after. A failed task is not billed: the refusal alone
// does not say the provider may make it, so the hold must be released, not charged.
func TestReviewExpiryOfAQueuedTaskThatEndedMeanwhile(t *testing.T) {
	wantUsed := int64(0)
	reviewExpiry(t, func(w http.ResponseWriter, r *http.Request, cancelled *atomic.Bool) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/cancel"):
			cancelled.Store(true)
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"code":"UnsupportedOperation","message":"task status is FAILED, cannot be canceled","request_id":"r"}`)
		case cancelled.Load():
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"FAILED","code":"InternalError","message":"failed"},"request_id":"r"}`)
		default:
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"PENDING"},"request_id":"r"}`)
		}
	}, wantUsed)
}

// TestReviewExpiryOfATaskWhoseAnswersAreUnusable: a DashScope task read RUNNING within its
// execution_expires_after, whose answers are unusable past it, may still be made and billed at
// the provider, as one read RUNNING past it (charged its estimate) may: it must not be released.
func TestReviewExpiryOfATaskWhoseAnswersAreUnusable(t *testing.T) {
	var reads atomic.Int64
	reviewExpiry(t, func(w http.ResponseWriter, r *http.Request, _ *atomic.Bool) {
		if reads.Add(1) == 1 {
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"RUNNING"},"request_id":"r"}`)
			return
		}
		io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":7},"request_id":"r"}`)
	}, 1)
}

// reviewExpiry creates one task at a fake DashScope answering reads with read, reads it within
// its execution_expires_after (3600 s) and again two hours on, and checks it expired with wantUsed
// units charged (0: released; 1: its estimate).
func reviewExpiry(t *testing.T, read func(http.ResponseWriter, *http.Request, *atomic.Bool), wantUsed int64) {
	var cancelled atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/cancel") {
			io.WriteString(w, `{"output":{"task_id":"ds-1","task_status":"PENDING"},"request_id":"r"}`)
			return
		}
		read(w, r, &cancelled)
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL + "/api/v1")
	clock := testclock.New(time.Unix(1_800_000_000, 0))
	store := openBadger(t)
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "wan", BaseURL: base, APIKey: "k", Protocol: adaptor.DashScope, Models: []string{"m"}}})
	if err != nil {
		t.Fatal(err)
	}
	meter := accounting.NewMeter(store, time.Hour, zap.NewNop())
	t.Cleanup(meter.Close)
	h := &Handler{Catalog: cat, Store: store, Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop(), Now: clock.Now,
		Accounting: &accounting.Accountant{Store: store, Meter: meter, Prices: unitPrice(t), Now: clock.Now}}
	quota := int64(10)
	r := serveAs(h, http.MethodPost, createPath, `{"model":"m","execution_expires_after":3600,"content":[{"type":"text","text":"hi"}]}`,
		storage.Limits{Quota: &quota, MaxActiveTasks: 1})
	id, _ := decode(t, r)["id"].(string)
	if r.Code != http.StatusOK || id == "" {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	serve(h, http.MethodGet, createPath+"/"+id, "")
	clock.Advance(2 * time.Hour)
	serve(h, http.MethodGet, createPath+"/"+id, "")
	rec, err := store.Task(context.Background(), id)
	if err != nil || !rec.Finished || rec.Status != StatusExpired {
		t.Fatalf("record: %s finished %v, %v; want expired and finished", rec.Status, rec.Finished, err)
	}
	if active, used := counters(t, store); active != 0 || used != wantUsed {
		t.Errorf("active %d, used %d; want 0 and %d", active, used, wantUsed)
	}
}
