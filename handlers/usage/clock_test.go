package usage

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/internal/testclock"
)

// dayReportAnswer is a report's answer as JSON: its range and its rows.
type dayReportAnswer struct {
	From, To string
	Rows     []map[string]any
}

// dayReport asks rec for its report by day over the default range.
func dayReport(t *testing.T, rec *Recorder) dayReportAnswer {
	t.Helper()
	w := httptest.NewRecorder()
	rec.ServeReport(w, httptest.NewRequest("GET", "/mediagw/usage?group_by=day", nil))
	var r dayReportAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	return r
}

// TestDayAggregatesAcrossDates records a request at each test instant and the finish of a task
// it created 45 seconds later, after midnight where the instant is a day's last minute: the
// request counts on its own day, the finish on the day the clock gave it, and the report's
// default range (ending on the clock's day) holds both.
func TestDayAggregatesAcrossDates(t *testing.T) {
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		mem := newMem()
		rec := &Recorder{Logger: zap.NewNop(), Counters: mem, Index: mem, Now: clock.Now}
		e := NewEntry("/v1/chat/completions")
		e.Authenticated("acme", "key_1")
		e.Routed("m", "p", "p")
		e.Accepted()
		e.Settled(5)
		rec.Write(e.Finish(200, clock.Now(), "").Record)
		refundAt := clock.Advance(45 * time.Second)
		rec.Write(Record{Event: EventTaskFinished, Time: refundAt, Account: "acme", KeyID: "key_1", Model: "m", Amount: 3})

		report := dayReport(t, rec)
		today, requestDay := refundAt.UTC().Format(dayLayout), at.UTC().Format(dayLayout)
		if want := refundAt.UTC().AddDate(0, 0, 1-DefaultDays).Format(dayLayout); report.To != today || report.From != want {
			t.Fatalf("default range %s..%s, want %s..%s", report.From, report.To, want, today)
		}
		want := map[string][2]int64{requestDay: {1, 5}} // day: requests, amount in micro-units
		if today == requestDay {
			want[today] = [2]int64{1, 8}
		} else {
			want[today] = [2]int64{0, 3}
		}
		if len(report.Rows) != len(want) {
			t.Fatalf("rows %+v, want days %v", report.Rows, want)
		}
		for _, r := range report.Rows {
			day, _ := r["day"].(string)
			v, ok := want[day]
			if !ok || r[FieldRequests] != float64(v[0]) || r[FieldAmount] != billing.Money(v[1]).String() {
				t.Errorf("row %v, want day %s with requests and amount (micro-units) %v", r, day, v)
			}
		}
	})
}

// TestDayAggregatesAtMidnight records a request of one account and model a millisecond before a
// UTC midnight and one at it (the second through the counters kept for the first): each counts
// on its own day, at a month's end, a year's end and around 29 February; the report's default
// range ends on the clock's day, the earlier day until the midnight and the new one from it.
func TestDayAggregatesAtMidnight(t *testing.T) {
	for _, midnight := range testclock.Midnights {
		t.Run(midnight.Format(time.DateOnly), func(t *testing.T) {
			before, at := midnight.Add(-time.Millisecond), midnight
			clock := testclock.New(before)
			mem := newMem()
			rec := &Recorder{Logger: zap.NewNop(), Counters: mem, Index: mem, Now: clock.Now}
			report := func() (from, to string, days map[string]any) {
				t.Helper()
				r := dayReport(t, rec)
				days = map[string]any{}
				for _, row := range r.Rows {
					days[row["day"].(string)] = row[FieldRequests]
				}
				return r.From, r.To, days
			}
			for _, when := range []time.Time{before, at} {
				clock.Set(when)
				e := NewEntry("/v1/chat/completions")
				e.Authenticated("acme", "key_1")
				e.Routed("m", "p", "p")
				e.Accepted()
				rec.Write(e.Finish(200, when, "").Record)
				from, to, _ := report()
				if day := when.Format(time.DateOnly); to != day || from != when.AddDate(0, 0, 1-DefaultDays).Format(time.DateOnly) {
					t.Errorf("at %s the default range is %s..%s, want %d days up to %s", when.Format(time.RFC3339Nano), from, to, DefaultDays, day)
				}
			}
			_, _, days := report()
			want := map[string]any{before.Format(time.DateOnly): float64(1), at.Format(time.DateOnly): float64(1)}
			if fmt.Sprint(days) != fmt.Sprint(want) {
				t.Errorf("requests by day %v, want %v", days, want)
			}
		})
	}
}
