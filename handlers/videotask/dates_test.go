package videotask

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestTaskRecordAcrossDates follows a task created at each test instant: its record is dated and
// kept by the clock (creation, retention, refresh interval), a read 30 s on (after midnight where
// the instant is a day's last half-minute) refreshes it, one within the refresh interval does
// not, and once it runs past the longest execution time it is expired, released and refunded,
// and kept for the retention from that finish.
func TestTaskRecordAcrossDates(t *testing.T) {
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		u := newTaskUpstream(t, "running")
		h := newHandler(t, u.URL, store)
		h.Now, h.Retention, h.RefreshInterval = clock.Now, time.Hour, time.Minute
		h.Client.Timeout = 10 * time.Second
		meter := accounting.NewMeter(store, time.Hour, zap.NewNop())
		t.Cleanup(meter.Close)
		h.Accounting = &accounting.Accountant{Store: store, Meter: meter, Prices: unitPrice(t), Now: clock.Now}
		quota := int64(10)
		if w := serveAs(h, "POST", createPath, createBody, storage.Limits{Quota: &quota, MaxActiveTasks: 5}); w.Code != 200 {
			t.Fatalf("create: %d %s", w.Code, w.Body)
		}
		record := func() storage.Task {
			t.Helper()
			rec, err := store.Task(context.Background(), "cgt-race")
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
		if rec := record(); rec.CreatedAt != at.Unix() || rec.ExpiresAt != at.Add(time.Hour).Unix() {
			t.Fatalf("created %d, expires %d; want %d and an hour later", rec.CreatedAt, rec.ExpiresAt, at.Unix())
		}
		read := func() {
			t.Helper()
			if w := serve(h, "GET", createPath+"/cgt-race", ""); w.Code != 200 {
				t.Fatalf("query at %s: %d %s", clock.Now().Format(time.RFC3339), w.Code, w.Body)
			}
		}

		refreshed := clock.Advance(30 * time.Second)
		before := u.calls.Load()
		read()
		if rec := record(); u.calls.Load() != before+1 || rec.RefreshedAt != refreshed.UnixNano() || rec.Status != "running" {
			t.Fatalf("read at %s: %d upstream calls, refreshed at %d, status %q", refreshed.Format(time.RFC3339), u.calls.Load()-before, rec.RefreshedAt, rec.Status)
		}
		clock.Advance(50 * time.Second)
		read()
		if n := u.calls.Load() - before; n != 1 {
			t.Fatalf("a read within the refresh interval went upstream (%d calls)", n)
		}

		clock.Set(at.Add(storage.MaxTaskRun - time.Minute))
		read()
		if rec := record(); rec.Finished || rec.Status != "running" {
			t.Fatalf("within the longest execution time: status %q finished %v", rec.Status, rec.Finished)
		}
		expired := at.Add(storage.MaxTaskRun + maxOverdueGrace + time.Minute)
		clock.Set(expired)
		read()
		rec := record()
		if rec.Status != StatusExpired || rec.FinishedAt != expired.Unix() || !rec.Expiry().Equal(expired.Add(time.Hour)) {
			t.Fatalf("overdue: status %q finished at %d, expiry %s; want expired at %d, kept an hour", rec.Status, rec.FinishedAt, rec.Expiry(), expired.Unix())
		}
		assertFinished(t, store)
	})
}
