package integration

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	// The tracing directive, which standardset leaves out (cmd/caddy links it).
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/tracing"

	"github.com/mediagw/mediagw/handlers/billing"
)

// observabilityCaddyfile routes the mediagw.usage logger to its own file (through the buffered
// writer), and traces requests
// (the exporter is "none": the trace ids are what is checked).
const observabilityCaddyfile = `{
	{{globals}}
	log usage {
		output mediagw_buffered {
			flush_interval 50ms
			output file {{usage_log}} {
				roll_disabled
			}
		}
		format json
		include mediagw.usage
	}
	mediagw {
		storage badger {{data}}
		refund_unsuccessful_tasks
		disabled_accounts {{disabled}}
		provider obschat {
			base_url http://127.0.0.1:{{sim_port}}/v1
			api_key sim-upstream-key
			models {{chat_model}} {{poor_model}}
			cost 1
		}
		provider obsvideo {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models {{video_model}}
			cost 1
		}
		key mg-obs {
			account {{account}}
		}
		key mg-obs-poor {
			account {{poor_account}}
			quota 2
		}
		watcher {
			interval 200ms
		}
		callbacks {
			allow_private
			retry_schedule 100ms
		}
	}
}

http://127.0.0.1:{{port}} {
	log {
		output file {{access_log}} {
			roll_disabled
		}
		format json
	}
	route {
		tracing
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 100ms
		}
		mediagw_route
		reverse_proxy 127.0.0.1:{{sim_port}}
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 300ms
		running_for 300ms
		api_key sim-upstream-key
	}
}
`

// usageRecord is one line of the mediagw.usage log.
type usageRecord struct {
	Logger           string  `json:"logger"`
	Event            string  `json:"event"`
	Account          string  `json:"account"`
	KeyID            string  `json:"key_id"`
	Endpoint         string  `json:"endpoint"`
	Model            string  `json:"model"`
	Provider         string  `json:"provider"`
	Upstream         string  `json:"upstream"`
	Cost             int64   `json:"cost"`
	Amount           string  `json:"amount"`
	Status           string  `json:"status"`
	UpstreamLatency  float64 `json:"upstream_latency"`
	TaskID           string  `json:"task_id"`
	PromptTokens     *int64  `json:"prompt_tokens"`
	CompletionTokens *int64  `json:"completion_tokens"`
	TotalTokens      *int64  `json:"total_tokens"`
	TraceID          string  `json:"trace_id"`
	// TS is the record's time (Caddy's JSON log format: Unix seconds), which dates its aggregates.
	TS float64 `json:"ts"`
}

// day is the UTC day of the record's aggregates.
func (r usageRecord) day() string {
	sec, frac := math.Modf(r.TS)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format(time.DateOnly)
}

func readUsageLog(t *testing.T, path, account string) []usageRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []usageRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec usageRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("usage log line is not JSON: %s", sc.Bytes())
		}
		if rec.Logger != "mediagw.usage" {
			t.Fatalf("the usage log has an entry of logger %q: %s", rec.Logger, sc.Bytes())
		}
		if rec.Account == account {
			out = append(out, rec)
		}
	}
	return out
}

// scrape reads the admin endpoint's /metrics.
func scrape(t *testing.T, g *gateway) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := client.Get("http://" + g.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// value is the counter or gauge value (or a histogram's sample count) of the series with
// exactly these labels; 0 when there is none.
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	for _, m := range f.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		match := true
		for _, lp := range m.Label {
			if labels[lp.GetName()] != lp.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

func TestMetricsUsageRecordsAndReport(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	chatModel, poorModel, videoModel := "obs-chat-"+run, "obs-poor-"+run, "obs-video-"+run
	account, poorAccount := "obs-"+run, "obs-poor-"+run
	usageLog, accessLog := filepath.Join(t.TempDir(), "usage.log"), filepath.Join(t.TempDir(), "access.log")
	base, g := startSimGateway(t, observabilityCaddyfile, map[string]string{
		"usage_log": usageLog, "access_log": accessLog, "chat_model": chatModel, "poor_model": poorModel, "video_model": videoModel,
		"account": account, "poor_account": poorAccount, "disabled": "nobody-0",
	})
	before := scrape(t, g)
	quotaRejections := value(before, "mediagw_rejections_total", map[string]string{"reason": "quota"})
	delivered := value(before, "mediagw_callback_deliveries_total", map[string]string{"outcome": "delivered"})
	unauthenticated := value(before, "mediagw_rejections_total", map[string]string{"reason": "unauthenticated"})
	// The upstream durations have no model label: the runs before this one (go test -count)
	// counted into the same series.
	chatUpstream := map[string]string{"provider": "obschat", "upstream": "default", "endpoint": "/v1/chat/completions"}
	videoUpstream := map[string]string{"provider": "obsvideo", "upstream": "default", "endpoint": "/api/v3/contents/generations/tasks"}
	chatCalls := value(before, "mediagw_upstream_request_duration_seconds", chatUpstream)
	videoCalls := value(before, "mediagw_upstream_request_duration_seconds", videoUpstream)
	if r := call(t, "POST", base+"/v1/chat/completions", "mg-wrong", `{"model":"x"}`); r.status != 401 {
		t.Fatalf("unknown key = %d", r.status)
	}

	// 7 chat calls: 5 plain, 2 streamed with the final usage chunk; one carries a trace context.
	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	for i := range 7 {
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, chatModel)
		if i >= 5 {
			body = fmt.Sprintf(`{"model":%q,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, chatModel)
		}
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer mg-obs")
		req.Header.Set("Content-Type", "application/json")
		if i == 0 {
			req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
		}
		if r := do(t, req); r.status != 200 {
			t.Fatalf("chat %d = %d %s", i, r.status, r.body)
		}
	}

	// 3 tasks: two succeed, one fails (and is refunded); one has a callback.
	rc := newReceiver(t, func(int) int { return 200 })
	var ids []string
	polls := 0
	for i, prompt := range []string{"a lighthouse", "a harbour", "please [[fail]]"} {
		cb := ""
		if i == 0 {
			cb = fmt.Sprintf(`,"callback_url":%q`, rc.URL+"/hook")
		}
		r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-obs",
			fmt.Sprintf(`{"model":%q,"content":[{"type":"text","text":%q}]%s}`, videoModel, prompt, cb))
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		ids = append(ids, r.field("id"))
	}
	finalStatus := map[string]string{}
	for _, id := range ids {
		waitFor(t, "task "+id+" to finish", func() bool {
			polls++
			r := call(t, "GET", base+"/api/v3/contents/generations/tasks/"+id, "mg-obs", nil)
			s := r.field("status")
			finalStatus[id] = s
			return s == "succeeded" || s == "failed"
		})
	}

	// 2 quota rejections: a quota of 2 allows two calls.
	for i := range 4 {
		r := call(t, "POST", base+"/v1/chat/completions", "mg-obs-poor",
			fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, poorModel))
		if want := map[bool]int{true: 200, false: 402}[i < 2]; r.status != want {
			t.Fatalf("poor call %d = %d, want %d: %s", i, r.status, want, r.body)
		}
	}
	// A client can read a task's end as soon as it is stored; its side effects (the finish
	// metric, the refund, the callback) follow from whoever stored it, the watcher perhaps.
	finishedTasks := func(m map[string]*dto.MetricFamily, status string) float64 {
		return value(m, "mediagw_tasks_finished_total", map[string]string{"provider": "obsvideo", "model": videoModel, "status": status})
	}
	// A request's usage record is written once it is settled, after its answer (a stream's
	// last event) may have reached the client; a task's finish counts it finished, then writes
	// its record. A record's write counts the spend first: once every record is in the usage log
	// (7 chats, 3 creates, the polls and 3 ends; the poor account's 2 calls), the spend metric
	// has every charge.
	allRecords := func() bool {
		return len(readUsageLog(t, usageLog, account)) == 7+3+polls+3 && len(readUsageLog(t, usageLog, poorAccount)) == 2
	}
	waitFor(t, "the callbacks and the tasks' ends", func() bool {
		m := scrape(t, g)
		return len(rc.seen()) > 0 && value(m, "mediagw_callback_outbox_pending", map[string]string{}) == 0 &&
			value(m, "mediagw_callback_deliveries_total", map[string]string{"outcome": "delivered"})-delivered == float64(len(rc.seen())) &&
			finishedTasks(m, "succeeded")+finishedTasks(m, "failed") == 3 && allRecords()
	})

	m := scrape(t, g)
	chat := map[string]string{"endpoint": "/v1/chat/completions", "provider": "obschat", "model": chatModel, "code": "200"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mediagw_requests_total", chat, 7},
		{"mediagw_requests_total", map[string]string{"endpoint": "/api/v3/contents/generations/tasks", "provider": "obsvideo", "model": videoModel, "code": "200"}, 3},
		{"mediagw_requests_total", map[string]string{"endpoint": "/api/v3/contents/generations/tasks/{id}", "provider": "obsvideo", "model": videoModel, "code": "200"}, float64(polls)},
		{"mediagw_requests_total", map[string]string{"endpoint": "/v1/chat/completions", "provider": "obschat", "model": poorModel, "code": "200"}, 2},
		{"mediagw_requests_total", map[string]string{"endpoint": "/v1/chat/completions", "provider": "obschat", "model": poorModel, "code": "402"}, 2},
		{"mediagw_tasks_created_total", map[string]string{"provider": "obsvideo", "model": videoModel}, 3},
		{"mediagw_tasks_finished_total", map[string]string{"provider": "obsvideo", "model": videoModel, "status": "succeeded"}, 2},
		{"mediagw_tasks_finished_total", map[string]string{"provider": "obsvideo", "model": videoModel, "status": "failed"}, 1},
		{"mediagw_tasks_active", map[string]string{"provider": "obsvideo"}, 0},
		{"mediagw_spend_micro_units_total", map[string]string{"account": account, "model": chatModel}, 7e6},
		{"mediagw_spend_micro_units_total", map[string]string{"account": account, "model": videoModel}, 2e6},
		{"mediagw_spend_micro_units_total", map[string]string{"account": poorAccount, "model": poorModel}, 2e6},
		{"mediagw_upstream_request_duration_seconds", chatUpstream, chatCalls + 7 + 2},
		{"mediagw_upstream_request_duration_seconds", videoUpstream, videoCalls + 3},
	} {
		if got := value(m, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := value(m, "mediagw_rejections_total", map[string]string{"reason": "quota"}) - quotaRejections; got != 2 {
		t.Errorf("quota rejections grew by %v, want 2", got)
	}
	if got := value(m, "mediagw_rejections_total", map[string]string{"reason": "unauthenticated"}) - unauthenticated; got != 1 {
		t.Errorf("unauthenticated rejections grew by %v, want 1", got)
	}
	if value(m, "mediagw_task_refresh_lag_seconds", map[string]string{}) == 0 {
		t.Errorf("no refresh lag was observed")
	}
	for name, f := range m {
		if !strings.HasPrefix(name, "mediagw_") {
			continue
		}
		for _, series := range f.Metric {
			for _, lp := range series.Label {
				if strings.Contains(lp.GetValue(), "mg-") || strings.Contains(lp.GetValue(), "://") || strings.Contains(lp.GetValue(), "sim-upstream-key") {
					t.Errorf("%s has a label that carries a key or a URL: %s=%q", name, lp.GetName(), lp.GetValue())
				}
				if lp.GetName() == "account" && name != "mediagw_spend_micro_units_total" {
					t.Errorf("%s has an account label", name)
				}
			}
		}
	}

	// Two reloads; the counters keep their values and keep counting.
	for i := 1; i <= 2; i++ {
		g.vars["disabled"] = fmt.Sprintf("nobody-%d", i)
		if err := g.reload(observabilityCaddyfile); err != nil {
			t.Fatal(err)
		}
		if r := call(t, "POST", base+"/v1/chat/completions", "mg-obs", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, chatModel)); r.status != 200 {
			t.Fatalf("chat after reload %d = %d %s", i, r.status, r.body)
		}
		if got := value(scrape(t, g), "mediagw_requests_total", chat); got != float64(7+i) {
			t.Fatalf("after reload %d: chat requests = %v, want %d", i, got, 7+i)
		}
	}

	// Usage records: one per accepted call, one per finished task; their amounts (cost 1 is the
	// price {request 1}: 1 per call, 1 per succeeded task, a failed one released) add up to the
	// account's quota_used, the money it was charged.
	var recs []usageRecord
	waitFor(t, "the usage records", func() bool {
		recs = readUsageLog(t, usageLog, account)
		return len(recs) >= 9+3+polls+3
	})
	count := map[string]int{}
	var sum int64
	for _, r := range recs {
		count[r.Event+" "+r.Endpoint+" "+r.Status]++
		if r.Cost != 0 {
			t.Errorf("record with a flat cost: %+v", r)
		}
		if r.Amount != "" {
			amount, err := billing.ParseMoney(r.Amount)
			if err != nil {
				t.Errorf("record amount %q: %v", r.Amount, err)
			}
			sum += int64(amount)
		}
		if r.KeyID == "" || r.Provider == "" || r.Upstream == "" || r.Model == "" {
			t.Errorf("record misses a field: %+v", r)
		}
		if r.Endpoint == "/v1/chat/completions" {
			if r.PromptTokens == nil || *r.PromptTokens != 5 || *r.CompletionTokens != 5 || *r.TotalTokens != 10 || r.Amount != "1" || r.UpstreamLatency <= 0 {
				t.Errorf("chat record = %+v (tokens %v)", r, r.TotalTokens)
			}
		}
		if r.Event == "task_finished" {
			want := map[string]string{"succeeded": "1", "failed": ""}[r.Status]
			if r.Amount != want || !slices.Contains(ids, r.TaskID) {
				t.Errorf("task_finished record = %+v", r)
			}
		}
	}
	wantCount := map[string]int{
		"request /v1/chat/completions 200":                           9,
		"task_created /api/v3/contents/generations/tasks 200":        3,
		"request /api/v3/contents/generations/tasks/{id} 200":        polls,
		"task_finished /api/v3/contents/generations/tasks succeeded": 2,
		"task_finished /api/v3/contents/generations/tasks failed":    1,
	}
	if len(count) != len(wantCount) || len(recs) != 9+3+polls+3 {
		t.Errorf("records by kind = %v, want %v", count, wantCount)
	}
	for k, n := range wantCount {
		if count[k] != n {
			t.Errorf("%d records %q, want %d", count[k], k, n)
		}
	}
	if !slices.ContainsFunc(recs, func(r usageRecord) bool { return r.TraceID == traceID }) {
		t.Errorf("no usage record carries the request's trace id %s", traceID)
	}
	u := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/"+account+"/usage", "", nil).json(t)
	if used := u["quota_used"]; used != billing.Money(sum).String() || sum != (9+2)*billing.Micro {
		t.Errorf("records sum to %v, account quota_used = %v, want both 11", billing.Money(sum), used)
	}
	// Access log entries carry the account, model and provider; no log carries a key.
	access, err := os.ReadFile(accessLog)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(string(access)), "\n") {
		var e struct {
			UserID   string `json:"user_id"`
			Account  string `json:"account"`
			Model    string `json:"model"`
			Provider string `json:"provider"`
			Request  struct {
				URI string `json:"uri"`
			} `json:"request"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("access log line: %v: %s", err, line)
		}
		if e.Request.URI == "/v1/chat/completions" && e.Account == account {
			found = true
			if e.UserID == "" || e.Model != chatModel || e.Provider != "obschat" {
				t.Errorf("access log entry = %s", line)
			}
		}
	}
	if !found {
		t.Errorf("no access log entry of a chat call by %s", account)
	}
	usageBytes, err := os.ReadFile(usageLog)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"access": access, "usage": usageBytes} {
		for _, secret := range []string{"mg-obs", "mg-wrong", "sim-upstream-key"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("the %s log contains %q", name, secret)
			}
		}
	}
	poor := readUsageLog(t, usageLog, poorAccount)
	if len(poor) != 2 {
		t.Errorf("the quota-limited account has %d records, want 2 (refused calls have none)", len(poor))
	}

	// The CSV report per model and day matches the records, each counted on the day of its own
	// time (the calls may straddle midnight); the range runs from the day before the first
	// record to the day after the last.
	from, to := recs[0].day(), recs[0].day()
	for _, rec := range recs {
		from, to = min(from, rec.day()), max(to, rec.day())
	}
	from, to = shiftDay(t, from, -1), shiftDay(t, to, 1)
	req, _ := http.NewRequest("GET", "http://"+g.admin+"/mediagw/usage?account="+account+"&from="+from+"&to="+to+"&group_by=model,day", nil)
	req.Header.Set("Accept", "text/csv")
	r := do(t, req)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("usage report = %d %s", r.status, r.body)
	}
	lines, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v: %s", err, r.body)
	}
	// tally adds rec to v: requests, tasks, cost, prompt, completion and total tokens, amount.
	tally := func(v []int64, rec usageRecord) []int64 {
		if v == nil {
			v = make([]int64, 7)
		}
		if amount, err := billing.ParseMoney(rec.Amount); err == nil {
			v[6] += int64(amount)
		}
		if rec.Event == "request" || rec.Event == "task_created" {
			v[0]++
		}
		if rec.Event == "task_created" {
			v[1]++
		}
		v[2] += rec.Cost
		if rec.TotalTokens != nil {
			v[3] += *rec.PromptTokens
			v[4] += *rec.CompletionTokens
			v[5] += *rec.TotalTokens
		}
		return v
	}
	want := map[string][]int64{}      // by model
	perDay := map[[2]string][]int64{} // by model and day
	for _, rec := range recs {
		want[rec.Model] = tally(want[rec.Model], rec)
		k := [2]string{rec.Model, rec.day()}
		perDay[k] = tally(perDay[k], rec)
	}
	wantLines := [][]string{{"model", "day", "requests", "tasks", "cost", "prompt_tokens", "completion_tokens", "total_tokens", "amount"}}
	for k, vals := range perDay {
		line := []string{k[0], k[1]}
		for _, v := range vals[:6] {
			line = append(line, strconv.FormatInt(v, 10))
		}
		line = append(line, billing.Money(vals[6]).String())
		wantLines = append(wantLines, line)
	}
	// The report orders rows by day, then model.
	slices.SortFunc(wantLines[1:], func(a, b []string) int { return strings.Compare(a[1]+"\x00"+a[0], b[1]+"\x00"+b[0]) })
	if fmt.Sprint(lines) != fmt.Sprint(wantLines) {
		t.Errorf("CSV report =\n%v\nwant\n%v", lines, wantLines)
	}
	// caddy mediagw usage prints the same report.
	cli := exec.Command(caddyBinary(t), "mediagw", "usage", "--account", account, "--from", from, "--to", to,
		"--group-by", "model,day", "--csv", "--address", g.admin)
	out, err := cli.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != strings.TrimSpace(string(r.body)) {
		t.Errorf("caddy mediagw usage --csv: %v\n%s\nwant\n%s", err, out, r.body)
	}
	if len(want) != 2 || want[chatModel][2] != 0 || want[chatModel][6] != 9*billing.Micro || want[videoModel][1] != 3 || want[videoModel][6] != 2*billing.Micro {
		t.Errorf("records per model = %v", want)
	}
}

// shiftDay is the day (YYYY-MM-DD) n days after day.
func shiftDay(t *testing.T, day string, n int) string {
	t.Helper()
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		t.Fatal(err)
	}
	return d.AddDate(0, 0, n).Format(time.DateOnly)
}
