package caddymodule

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestUsageAggregatesInTheStoreAcrossDates keeps usage aggregates as the app does (the meter's
// counters and usageIndex in a Badger store) and writes records 45 s apart from each test
// instant: each counts on its own UTC day, after the meter has flushed to the store, and a
// report from the day before to the day after finds exactly those days.
func TestUsageAggregatesInTheStoreAcrossDates(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		meter := accounting.NewMeter(store, time.Hour, zap.NewNop())
		account := "acct-" + at.Format("20060102T150405")
		rec := &usage.Recorder{Logger: zap.NewNop(), Counters: meter, Index: usageIndex{store: store}, Now: clock.Now}
		first := clock.Now()
		rec.Write(usage.Record{Event: usage.EventRequest, Time: first, Account: account, Model: "m", Cost: 3})
		second := clock.Advance(45 * time.Second)
		rec.Write(usage.Record{Event: usage.EventRequest, Time: second, Account: account, Model: "m", Cost: 4})
		meter.Close() // the counts are in the store now

		day := func(t time.Time) string { return t.UTC().Format(time.DateOnly) }
		q := usage.Query{Account: account, From: day(first.AddDate(0, 0, -1)), To: day(second.AddDate(0, 0, 1)), GroupBy: []string{"day"}}
		rows, err := rec.Report(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][2]int64{} // day: requests, cost
		for _, r := range []struct {
			at   time.Time
			cost int64
		}{{first, 3}, {second, 4}} {
			w := want[day(r.at)]
			want[day(r.at)] = [2]int64{w[0] + 1, w[1] + r.cost}
		}
		if len(rows) != len(want) {
			t.Fatalf("rows %+v, want the days %v", rows, want)
		}
		for _, r := range rows {
			if w := want[r.Day]; r.Values[usage.FieldRequests] != w[0] || r.Values[usage.FieldCost] != w[1] {
				t.Errorf("day %s: %v, want requests and cost %v", r.Day, r.Values, w)
			}
		}
	})
}
