package console

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// usageDays is the index of the usage day totals in memory (the gateway keeps it in the store,
// caddymodule's usageIndex); the totals themselves are a meter's counters on Badger.
type usageDays struct {
	mu   sync.Mutex
	keys map[string][]string
}

func (x *usageDays) Mark(_ context.Context, day, key string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.keys[day] = append(x.keys[day], key)
	return nil
}

func (x *usageDays) Marked(_ context.Context, day string, fn func(string)) error {
	x.mu.Lock()
	keys := append([]string(nil), x.keys[day]...)
	x.mu.Unlock()
	for _, k := range keys {
		fn(k)
	}
	return nil
}

// TestDayChartsAtMidnight records a request at the start of the day 14 days before a UTC
// midnight, one a millisecond before it and one at it, and reads the daily charts and the
// 14-day totals a millisecond before the midnight and at it, at a month's end, a year's end and
// around 29 February: the charts cover the 14 UTC days up to the clock's, each request on its
// own day's point, and the oldest day leaves them at the midnight.
func TestDayChartsAtMidnight(t *testing.T) {
	for _, midnight := range testclock.Midnights {
		t.Run(midnight.Format(time.DateOnly), func(t *testing.T) {
			store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{Now: func() time.Time { return midnight }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := store.Close(); err != nil {
					t.Error(err)
				}
			})
			meter := accounting.NewMeter(store, time.Hour, zap.NewNop())
			t.Cleanup(meter.Close)
			rec := &usage.Recorder{Logger: zap.NewNop(), Counters: meter, Index: &usageDays{keys: map[string][]string{}}}
			oldest, before := midnight.AddDate(0, 0, -14), midnight.Add(-time.Millisecond)
			for _, at := range []time.Time{oldest, before, midnight} {
				e := usage.NewEntry("/v1/chat/completions")
				e.Authenticated("acme", "key_1")
				e.Routed("m", "p", "p")
				e.Accepted()
				e.Settled(1_000_000)
				rec.Write(e.Finish(200, at, "").Record)
			}
			day := func(d time.Time) int64 { return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC).Unix() }
			for _, c := range []struct {
				now   time.Time
				first time.Time       // the charts' first day
				at    map[int]float64 // requests by the index of their day
			}{
				{before, oldest, map[int]float64{0: 1, chartDays - 1: 1}},
				{midnight, oldest.AddDate(0, 0, 1), map[int]float64{chartDays - 2: 1, chartDays - 1: 1}},
			} {
				charts, err := dayCharts(context.Background(), rec, "acme", nil, c.now)
				if err != nil {
					t.Fatal(err)
				}
				x := charts[0].X
				if len(x) != chartDays || x[0] != day(c.first) || x[chartDays-1] != day(c.now) {
					t.Fatalf("at %s the charts' days are %v, want %d from %s to %s", c.now.Format(time.RFC3339Nano), x, chartDays,
						c.first.Format(time.DateOnly), c.now.Format(time.DateOnly))
				}
				for _, chart := range charts {
					if len(chart.Series) != 1 || chart.Series[0].Name != "m" {
						t.Fatalf("at %s chart %s has the series %+v, want m's", c.now.Format(time.RFC3339Nano), chart.ID, chart.Series)
					}
					for i, v := range chart.Series[0].Values {
						if *v != c.at[i] { // 1 request, 1 currency unit, on the days of c.at
							t.Errorf("at %s chart %s's day %s = %v, want %v", c.now.Format(time.RFC3339Nano), chart.ID,
								time.Unix(x[i], 0).UTC().Format(time.DateOnly), *v, c.at[i])
						}
					}
				}
				totals, err := dayTotals(context.Background(), rec, "acme", func(string) bool { return true }, c.now)
				if err != nil || totals.Requests != 2 || totals.QuotaUsed != 2_000_000 {
					t.Errorf("at %s the 14 days' totals are %+v (%v), want 2 requests and 2 spent", c.now.Format(time.RFC3339Nano), totals, err)
				}
			}
		})
	}
}
