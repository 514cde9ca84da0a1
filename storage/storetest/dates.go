package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// testRateWindowAcrossDates runs rate windows from each test instant, so that a window of a
// minute and one of a day straddle midnight, the month's or the year's end, or a leap day: the
// calls past the limit are refused with the wait that is left, and allowed once it has passed.
func testRateWindowAcrossDates(t *testing.T, s storage.Store) {
	ctx := context.Background()
	testclock.Each(t, func(t *testing.T, at time.Time) {
		for _, w := range []struct {
			limit  int
			window time.Duration
		}{{3, time.Minute}, {2, 24 * time.Hour}} {
			name := "rate/dates/" + at.Format(time.RFC3339) + "/" + w.window.String()
			allow := func(when time.Time) (bool, time.Duration) {
				t.Helper()
				ok, wait, err := s.AllowRate(ctx, name, w.limit, w.window, when)
				if err != nil {
					t.Fatalf("AllowRate at %s: %v", when.Format(time.RFC3339), err)
				}
				return ok, wait
			}
			for i := range w.limit {
				if ok, _ := allow(at.Add(time.Duration(i) * time.Second)); !ok {
					t.Fatalf("window %v: call %d refused", w.window, i+1)
				}
			}
			// 40 s on: past midnight where the instant is a day's last half-minute.
			later := at.Add(40 * time.Second)
			ok, wait := allow(later)
			if want := w.window - 40*time.Second; ok || wait != want {
				t.Fatalf("window %v: the call over the limit = %v, wait %v; want refused, wait %v", w.window, ok, wait, want)
			}
			if ok, _ := allow(later.Add(wait - time.Millisecond)); ok {
				t.Fatalf("window %v: allowed before the advised wait", w.window)
			}
			if ok, _ := allow(later.Add(wait)); !ok {
				t.Fatalf("window %v: refused after the advised wait", w.window)
			}
		}
	})
}
