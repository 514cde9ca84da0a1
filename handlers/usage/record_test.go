package usage

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// memCounters is an in-memory Counters and Index.
type memCounters struct {
	mu sync.Mutex
	c  map[string]int64
	ix map[string][]string
}

func newMem() *memCounters { return &memCounters{c: map[string]int64{}, ix: map[string][]string{}} }

func (m *memCounters) AddAll(names []string, deltas []int64) {
	m.mu.Lock()
	for i, name := range names {
		if deltas[i] != 0 {
			m.c[name] += deltas[i]
		}
	}
	m.mu.Unlock()
}
func (m *memCounters) Value(_ context.Context, name string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c[name], nil
}
func (m *memCounters) Mark(_ context.Context, day, key string) error {
	m.ix[day] = append(m.ix[day], key, key) // twice, as two processes may
	return nil
}
func (m *memCounters) Marked(_ context.Context, day string, fn func(string)) error {
	for _, k := range m.ix[day] {
		fn(k)
	}
	return nil
}

func TestEntryRecordsSettledAmount(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	mem := newMem()
	day := time.Date(2026, 11, 22, 23, 59, 0, 0, time.UTC)
	rec := &Recorder{Logger: zap.New(core), Counters: mem, Index: mem, Now: func() time.Time { return day.Add(30 * time.Second) }}

	e := NewEntry("/v1/chat/completions")
	e.Authenticated("acme/eu", "key_1")
	e.Routed("gpt/x", "openai", "openai")
	e.Accepted()
	e.Settled(2000)
	e.AddTokens(Tokens{Prompt: 1, Completion: 2, known: true})
	out := e.Finish(200, day, "")
	if !out.Accepted || out.Record.Amount != 2000 || out.Record.Cost != 0 || out.Record.Tokens.Total != 3 {
		t.Fatalf("outcome = %+v", out)
	}
	rec.Write(out.Record)
	if logs.Len() != 1 {
		t.Fatalf("log = %v", logs.All())
	}

	rows, err := rec.Report(context.Background(), Query{From: "2026-11-22", To: "2026-11-22", GroupBy: []string{"account", "model"}})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows = %v, %v", rows, err)
	}
	if r := rows[0]; r.Account != "acme/eu" || r.Model != "gpt/x" || r.Day != "" || r.Values[FieldAmount] != 2000 || r.Values[FieldRequests] != 1 || r.Values[FieldTotalTokens] != 3 {
		t.Fatalf("row = %+v", r)
	}
	if rows, _ := rec.Report(context.Background(), Query{From: "2026-11-23", To: "2026-11-30"}); len(rows) != 0 {
		t.Fatalf("a later day has rows: %v", rows)
	}

	unauth := NewEntry("/v1/models").Finish(401, day, "")
	if unauth.Accepted || unauth.Authenticated {
		t.Fatalf("an unauthenticated request was accepted: %+v", unauth)
	}
}

func TestParseQuery(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"/mediagw/usage", true},
		{"/mediagw/usage?from=2026-11-01&to=2026-11-30&group_by=model,day", true},
		{"/mediagw/usage?from=2026-13-01", false},
		{"/mediagw/usage?from=2026-11-30&to=2026-11-01", false},
		{"/mediagw/usage?group_by=key", false},
		{"/mediagw/usage?from=2020-01-01&to=2026-01-01", false},
		{"/mediagw/usage?account=%zz", false},
		{"/mediagw/usage?account=acme;from=2026-11-01", false},
		{"/mediagw/usage?account=acme&account=globex", false},
		{"/mediagw/usage?to=2026-11-20&to=2026-11-21", false},
		{"/mediagw/usage?group_by=day&group_by=model", false},
		{"/mediagw/usage?format=json&format=csv", false},
		{"/mediagw/usage?account=acme&format=csv&other=1&other=2", true},
	} {
		_, err := ParseQuery(httptest.NewRequest(http.MethodGet, c.url, nil), time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v", c.url, err)
		}
	}
}

// TestRecordsReportMoney checks that settled money reaches the record, its log line and the
// report as a decimal string.
func TestRecordsReportMoney(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	mem := newMem()
	day := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	rec := &Recorder{Logger: zap.New(core), Counters: mem, Index: mem, Now: func() time.Time { return day }}
	for _, amount := range []int64{2_500_000, 1} {
		e := NewEntry("/v1/chat/completions")
		e.Authenticated("acme", "key_1")
		e.Routed("gpt-4o-mini", "openai", "openai")
		e.Settled(amount)
		rec.Write(e.Finish(200, day, "").Record)
	}
	rec.Write(Record{Event: EventTaskFinished, Time: day, Account: "acme", Model: "gpt-4o-mini", Amount: 499_999})
	if got := logs.All()[0].ContextMap()["amount"]; got != "2.5" {
		t.Fatalf("logged amount = %v, want \"2.5\"", got)
	}
	r := httptest.NewRequest("GET", "/mediagw/usage?from=2026-11-22&to=2026-11-22&group_by=account", nil)
	w := httptest.NewRecorder()
	rec.ServeReport(w, r)
	if want := `"amount":"3"`; !strings.Contains(w.Body.String(), want) {
		t.Fatalf("report %s, want it to contain %s", w.Body, want)
	}
	r.Header.Set("Accept", "text/csv")
	w = httptest.NewRecorder()
	rec.ServeReport(w, r)
	if want := "account,requests,tasks,cost,prompt_tokens,completion_tokens,total_tokens,amount\nacme,2,0,0,0,0,0,3\n"; w.Body.String() != want {
		t.Fatalf("CSV report %q, want %q", w.Body, want)
	}
}

func TestStatusTextIsTheDecimalStatus(t *testing.T) {
	for _, status := range []int{0, 99, 100, 200, 404, 499, 599, 600, 1000} {
		if got, want := statusText(status), strconv.Itoa(status); got != want {
			t.Errorf("statusText(%d) = %q, want %q", status, got, want)
		}
	}
}
