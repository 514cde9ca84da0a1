package usage

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestReportCountsOnlyAllowedModels: a query with ModelAllowed sums only the aggregates of the
// models it allows, and those that name no model, whatever it groups by.
func TestReportCountsOnlyAllowedModels(t *testing.T) {
	mem := newMem()
	day := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	rec := &Recorder{Logger: zap.NewNop(), Counters: mem, Index: mem, Now: func() time.Time { return day }}
	for _, tc := range []struct {
		model  string
		amount int64
	}{{"video-a", 1000}, {"secret-b", 20000}, {"", 300}} {
		e := NewEntry("/v1/chat/completions")
		e.Authenticated("acme", "key_1")
		if tc.model != "" {
			e.Routed(tc.model, "p", "p")
		}
		e.Accepted()
		e.Settled(tc.amount)
		rec.Write(e.Finish(200, day, "").Record)
	}
	allowed := func(m string) bool { return m == "video-a" }
	rows, err := rec.Report(context.Background(), Query{Account: "acme", From: "2026-11-22", To: "2026-11-22", ModelAllowed: allowed})
	if err != nil || len(rows) != 1 || rows[0].Values[FieldAmount] != 1300 || rows[0].Values[FieldRequests] != 2 {
		t.Fatalf("rows of video-a and no model = %+v, %v", rows, err)
	}
	rows, err = rec.Report(context.Background(), Query{Account: "acme", From: "2026-11-22", To: "2026-11-22", GroupBy: []string{"model"}, ModelAllowed: allowed})
	if err != nil || len(rows) != 2 || rows[0].Model != "" || rows[1].Model != "video-a" {
		t.Fatalf("rows by model = %+v, %v", rows, err)
	}
	if rows, _ := rec.Report(context.Background(), Query{Account: "acme", From: "2026-11-22", To: "2026-11-22"}); len(rows) != 1 || rows[0].Values[FieldAmount] != 21300 {
		t.Fatalf("every model = %+v", rows)
	}
}
