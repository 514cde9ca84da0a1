package console

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/internal/testclock"
)

// chartValue is the value of a chart's series at index i, or -1 when it has none.
func chartValue(t *testing.T, charts []Chart, id, series string, i int) float64 {
	t.Helper()
	for _, c := range charts {
		if c.ID != id {
			continue
		}
		for _, s := range c.Series {
			if s.Name == series {
				if s.Values[i] == nil {
					return -1
				}
				return *s.Values[i]
			}
		}
		t.Fatalf("chart %s has no series %s: %+v", id, series, c.Series)
	}
	t.Fatalf("no chart %s", id)
	return 0
}

// TestSamplerChartsIncreasesBetweenSamples feeds the real collectors of internal/metrics and
// checks that each chart shows what happened between two samples, not the running totals.
func TestSamplerChartsIncreasesBetweenSamples(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg, true); err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	s := &Sampler{Gatherer: reg, Keep: 3, Now: clock.Now}
	// Earlier traffic (other tests of this process) is in the totals; the charts show increases.
	s.Sample()
	clock.Advance(time.Minute)
	for range 3 {
		metrics.Request("/v1/chat/completions", "chartp", "chart-model", 200)
	}
	metrics.Request("/v1/chat/completions", "chartp", "chart-model", 502)
	metrics.Spent("acme", "chart-model", 1_500_000)
	metrics.UpstreamDuration("chartp", "u1", "/v1/chat/completions", 200*time.Millisecond)
	metrics.UpstreamDuration("chartp", "u1", "/v1/chat/completions", 400*time.Millisecond)
	metrics.TaskCreated("chartp", "chart-model")
	s.Sample()
	clock.Advance(time.Minute)
	metrics.Request("/v1/chat/completions", "chartp", "chart-model", 200)
	s.Sample()

	charts := s.Charts()
	for _, c := range []struct {
		id, series string
		at         int
		want       float64
	}{
		{"requests", "chart-model", 0, 4},
		{"requests", "chart-model", 1, 1},
		{"errors", "chart-model", 0, 1},
		{"errors", "chart-model", 1, 0},
		{"spend", "chart-model", 0, 1.5},
		{"latency", "chartp", 0, 300},
		{"latency", "chartp", 1, -1}, // no upstream call in that interval: no point
		{"active", "chartp", 2, 1},
	} {
		if got := chartValue(t, charts, c.id, c.series, c.at); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s %s at %d = %v, want %v", c.id, c.series, c.at, got, c.want)
		}
	}
	if x := charts[0].X; len(x) != 2 || x[1]-x[0] != 60 {
		t.Errorf("requests chart times %v, want two a minute apart", x)
	}

	// Keep bounds the history: a fourth sample drops the first.
	clock.Advance(time.Minute)
	s.Sample()
	if n := len(s.Charts()[0].X); n != 2 {
		t.Errorf("after 4 samples with Keep 3 the requests chart has %d points, want 2", n)
	}
}
