package console

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
)

// Sampler keeps a bounded history of the gateway's own metrics (the collectors of
// internal/metrics on the config's registry), so that the overview can chart requests, errors,
// spend, active tasks and upstream latency over the last hours without reading the store. Its
// history is this process's: it starts empty when the configuration loads and holds at most
// Keep samples.
type Sampler struct {
	// Gatherer is the registry the gateway's metrics are registered on.
	Gatherer prometheus.Gatherer
	// Interval between samples. Default: one minute.
	Interval time.Duration
	// Keep is the number of samples kept. Default: 180 (three hours at one a minute).
	Keep int
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// Logger receives a failure to read the metrics.
	Logger *zap.Logger

	mu      sync.Mutex
	samples []metricSample // oldest first, at most Keep
	stop    context.CancelFunc
}

// metricSample is the cumulative value of each charted series at one moment.
type metricSample struct {
	at time.Time
	// requests and errors (answers with a status of 400 or more) by model; spend in micro-units
	// by model; active tasks by provider; upstream latency sums (seconds) and counts by provider.
	requests, errors, spend, active, latencySum, latencyCount map[string]float64
}

func (s *Sampler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Start takes a first sample, then one every Interval until Stop.
func (s *Sampler) Start() {
	if s.Interval <= 0 {
		s.Interval = time.Minute
	}
	if s.Keep <= 0 {
		s.Keep = 180
	}
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.Sample()
	go func() {
		t := time.NewTicker(s.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.Sample()
			}
		}
	}()
}

// Stop ends the sampling that Start began.
func (s *Sampler) Stop() {
	if s.stop != nil {
		s.stop()
	}
}

// Sample reads the metrics once and appends them to the history, dropping the oldest sample
// past Keep.
func (s *Sampler) Sample() {
	families, err := s.Gatherer.Gather()
	if err != nil {
		// Gather returns what it could read along with the error; chart that.
		s.Logger.Warn("reading the gateway's metrics for the console's charts", zap.Error(err))
	}
	m := metricSample{at: s.now(), requests: map[string]float64{}, errors: map[string]float64{},
		spend: map[string]float64{}, active: map[string]float64{}, latencySum: map[string]float64{},
		latencyCount: map[string]float64{}}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			l := labels(metric)
			switch f.GetName() {
			case "mediagw_requests_total":
				model := orNone(l["model"])
				m.requests[model] += metric.GetCounter().GetValue()
				if code := l["code"]; len(code) == 3 && code >= "400" {
					m.errors[model] += metric.GetCounter().GetValue()
				}
			case "mediagw_spend_micro_units_total":
				m.spend[orNone(l["model"])] += metric.GetCounter().GetValue()
			case "mediagw_tasks_active":
				m.active[orNone(l["provider"])] += metric.GetGauge().GetValue()
			case "mediagw_upstream_request_duration_seconds":
				p := orNone(l["provider"])
				m.latencySum[p] += metric.GetHistogram().GetSampleSum()
				m.latencyCount[p] += float64(metric.GetHistogram().GetSampleCount())
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, m)
	if keep := max(s.Keep, 2); len(s.samples) > keep {
		s.samples = append(s.samples[:0], s.samples[len(s.samples)-keep:]...)
	}
}

func labels(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// Chart is one chart's data as the overview's script and its table read it: X holds the times
// (Unix seconds), each series one value per time (nil where there is none).
type Chart struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Unit   string     `json:"unit"`
	X      []int64    `json:"x"`
	Series []Series   `json:"series"`
	Rows   []ChartRow `json:"-"` // the same data as a table, for readers without the chart
}

// Series is one line of a chart.
type Series struct {
	Name   string     `json:"name"`
	Values []*float64 `json:"values"`
}

// ChartRow is one time of a chart's table.
type ChartRow struct {
	Time   int64
	Values []string
}

// Charts turns the history into the overview's recent charts: requests, errors and spend per
// interval by model, active tasks by provider, and mean upstream latency per interval by
// provider. Counters are charted as their increase between two samples.
func (s *Sampler) Charts() []Chart {
	s.mu.Lock()
	samples := append([]metricSample(nil), s.samples...)
	s.mu.Unlock()
	increase := func(pick func(metricSample) map[string]float64, divisor float64) ([]int64, []Series) {
		return series(samples, true, func(prev, cur metricSample, key string) (float64, bool) {
			d := pick(cur)[key] - pick(prev)[key]
			if d < 0 { // the process restarted its counters
				d = pick(cur)[key]
			}
			return d / divisor, true
		}, pick)
	}
	var charts []Chart
	add := func(id, title, unit string, x []int64, ss []Series) {
		charts = append(charts, Chart{ID: id, Title: title, Unit: unit, X: x, Series: ss})
	}
	x, ss := increase(func(m metricSample) map[string]float64 { return m.requests }, 1)
	add("requests", "Requests by model", "requests", x, ss)
	x, ss = increase(func(m metricSample) map[string]float64 { return m.errors }, 1)
	add("errors", "Errors (status 400 and above) by model", "answers", x, ss)
	x, ss = increase(func(m metricSample) map[string]float64 { return m.spend }, 1e6)
	add("spend", "Spend by model", "currency units", x, ss)
	x, ss = series(samples, false, func(_, cur metricSample, key string) (float64, bool) {
		v, ok := cur.active[key]
		return v, ok
	}, func(m metricSample) map[string]float64 { return m.active })
	add("active", "Active tasks by provider", "tasks", x, ss)
	x, ss = series(samples, true, func(prev, cur metricSample, key string) (float64, bool) {
		n := cur.latencyCount[key] - prev.latencyCount[key]
		if n <= 0 {
			return 0, false
		}
		return 1000 * (cur.latencySum[key] - prev.latencySum[key]) / n, true
	}, func(m metricSample) map[string]float64 { return m.latencyCount })
	add("latency", "Mean upstream latency by provider", "ms", x, ss)
	for i := range charts {
		charts[i].Rows = tableRows(charts[i])
	}
	return charts
}

// series makes one series per key that appears in any sample (through keys), with value's
// answer at each sample, or at each sample but the first when delta (value then compares a
// sample with the one before it).
func series(samples []metricSample, delta bool, value func(prev, cur metricSample, key string) (float64, bool), keys func(metricSample) map[string]float64) ([]int64, []Series) {
	names := map[string]bool{}
	for _, m := range samples {
		for k := range keys(m) {
			names[k] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	start := 0
	if delta {
		start = 1
	}
	var x []int64
	for i := start; i < len(samples); i++ {
		x = append(x, samples[i].at.Unix())
	}
	out := make([]Series, 0, len(sorted))
	for _, name := range sorted {
		s := Series{Name: name, Values: make([]*float64, 0, len(x))}
		for i := start; i < len(samples); i++ {
			prev := samples[i]
			if delta {
				prev = samples[i-1]
			}
			if v, ok := value(prev, samples[i], name); ok {
				s.Values = append(s.Values, &v)
			} else {
				s.Values = append(s.Values, nil)
			}
		}
		out = append(out, s)
	}
	return x, out
}
