package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Registering twice on one registry reuses the collectors; a new registry (a reload) gets the
// same collectors, so values carry over.
func TestRegisterIsReloadSafe(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, true); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, true); err != nil {
		t.Fatalf("second registration: %v", err)
	}
	// The counter lives in the package: with -count=N it starts where the last run left it.
	before := testutil.ToFloat64(requests.WithLabelValues("/v1/chat/completions", "p-reg", "m-reg", "200"))
	Request("/v1/chat/completions", "p-reg", "m-reg", 200)
	next := prometheus.NewPedanticRegistry()
	if err := Register(next, true); err != nil {
		t.Fatal(err)
	}
	Request("/v1/chat/completions", "p-reg", "m-reg", 200)
	if got := testutil.ToFloat64(requests.WithLabelValues("/v1/chat/completions", "p-reg", "m-reg", "200")) - before; got != 2 {
		t.Fatalf("requests = %v more", got)
	}
	if n, err := testutil.GatherAndCount(next, "mediagw_requests_total"); err != nil || n == 0 {
		t.Fatalf("the new registry does not serve the counter: %d, %v", n, err)
	}
}

func TestAccountLabelCanBeTurnedOff(t *testing.T) {
	defer SetAccountLabel(true)
	SetAccountLabel(false)
	before := testutil.ToFloat64(spend.WithLabelValues("m-off"))
	Spent("acct-off", "m-off", 3)
	if got := testutil.ToFloat64(spend.WithLabelValues("m-off")) - before; got != 3 {
		t.Fatalf("spend without account grew by %v", got)
	}
	if n := testutil.CollectAndCount(spendByAccount); n != 0 && testutil.ToFloat64(spendByAccount.WithLabelValues("acct-off", "m-off")) != 0 {
		t.Fatalf("an account series was created with the label off")
	}
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, false); err != nil {
		t.Fatal(err)
	}
}

func TestEndpointLabelsAreBounded(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/chat/completions":                          "/v1/chat/completions",
		"/api/v3/contents/generations/tasks":            "/api/v3/contents/generations/tasks",
		"/api/v3/contents/generations/tasks/cgt-123":    "/api/v3/contents/generations/tasks/{id}",
		"/v1beta/models/gemini-x:generateContent":       "/v1beta/models/{model}:generateContent",
		"/v1beta/models/gemini-x:streamGenerateContent": "/v1beta/models/{model}:streamGenerateContent",
		"/v1beta/models/gemini-x:evil":                  "other",
		"/v1/models/gemini-x:generateContent":           "/v1/models/{model}:generateContent",
		"/v1/models/gemini-x:batchEmbedContents":        "/v1/models/{model}:batchEmbedContents",
		"/v1beta/models/gemini-x:countTokens":           "/v1beta/models/{model}:countTokens",
		"/v1/models/gemini-x:evil":                      "other",
		"/v1/models/:generateContent":                   "other",
		"/v1/models/gpt-4o-mini":                        "/v1/models/{id}",
		"/v1beta/models/gemini-x":                       "other",
		"/v1/anything/secret?key=mg-123":                "other",
		"/v1/images/tasks/t-1":                          "/v1/images/tasks/{id}",
		"/v1/responses/resp_1":                          "/v1/responses/{id}",
		"/v1/responses/input_tokens":                    "/v1/responses/input_tokens",
		"/v1/responses/compact":                         "/v1/responses/compact",
		"/v1/messages/count_tokens":                     "/v1/messages/count_tokens",
		"/v1/messages/batches":                          "/v1/messages/batches",
		"/v1/messages/anything":                         "other",
		"/v1/video/generations/vg-1":                    "/v1/video/generations/{id}",
	} {
		if got := Endpoint(path); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestReason(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		want   string
	}{
		{402, "insufficient_quota", ReasonQuota},
		{429, "rate_limit_exceeded", ReasonRate},
		{429, "too_many_active_tasks", ReasonActiveTasks},
		{403, "model_not_allowed", ReasonModelNotAllowed},
		{400, "missing_model", ReasonInvalidRequest},
		{401, "invalid_api_key", ReasonUnauthenticated},
		{403, "ip_not_allowed", ReasonForbidden},
		{413, "request_too_large", ReasonTooLarge},
		{502, "invalid_response", ""},
		{200, "", ""},
	} {
		if got := Reason(c.status, c.code); got != c.want {
			t.Errorf("Reason(%d, %q) = %q, want %q", c.status, c.code, got, c.want)
		}
	}
}

// zeroRuns counts the runs of TestRareSeriesStartAtZero.
var zeroRuns int

// Series whose label values are known are served at 0 before their first event, so that rate()
// and increase() see that event (Prometheus counts increments between scrapes only).
// (Other tests of this package share the collectors, so only the new model's values are known.)
func TestRareSeriesStartAtZero(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, true); err != nil {
		t.Fatal(err)
	}
	served := servedSeries(t, reg)
	for _, reason := range []string{ReasonQuota, ReasonRate, ReasonActiveTasks, ReasonModelNotAllowed, ReasonUnavailable} {
		if _, ok := served[`mediagw_rejections_total{reason="`+reason+`"}`]; !ok {
			t.Errorf("mediagw_rejections_total{reason=%q} is not served before the first rejection", reason)
		}
	}
	for _, outcome := range []string{CallbackDelivered, CallbackGone, CallbackRetry, CallbackGivenUp, CallbackRefused} {
		if _, ok := served[`mediagw_callback_deliveries_total{outcome="`+outcome+`"}`]; !ok {
			t.Errorf("mediagw_callback_deliveries_total{outcome=%q} is not served before the first delivery", outcome)
		}
	}

	// A model of its own in each run (-count=N), whose series have never been made.
	zeroRuns++
	model := fmt.Sprintf("m-zero-%d", zeroRuns)
	TaskCreated("p-zero", model)
	served = servedSeries(t, reg)
	for _, status := range []string{"succeeded", "failed", "cancelled", "expired"} {
		name := `mediagw_tasks_finished_total{model="` + model + `",provider="p-zero",status="` + status + `"}`
		if v, ok := served[name]; !ok || v != 0 {
			t.Errorf("%s after the model's first create: served %v, value %v", name, ok, v)
		}
	}
	TaskFinished("p-zero", model, "failed")
	if got := servedSeries(t, reg)[`mediagw_tasks_finished_total{model="`+model+`",provider="p-zero",status="failed"}`]; got != 1 {
		t.Errorf("failed = %v after one failure", got)
	}
}

// servedSeries gathers reg: the value of each series by its name and sorted labels.
func servedSeries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() { // sorted by name
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue()
		}
	}
	return out
}

func TestSpentCountsMicroUnitsPerAccountAndModel(t *testing.T) {
	before := testutil.ToFloat64(spendByAccount.WithLabelValues("acct-spend", "veo-3"))
	Spent("acct-spend", "veo-3", 2_500_000)
	Spent("acct-spend", "veo-3", 1)
	Spent("acct-spend", "veo-3", -7) // a negative amount is no spend
	if got := testutil.ToFloat64(spendByAccount.WithLabelValues("acct-spend", "veo-3")) - before; got != 2_500_001 {
		t.Fatalf("spend grew by %v, want 2500001", got)
	}
	defer SetAccountLabel(true)
	SetAccountLabel(false)
	before = testutil.ToFloat64(spend.WithLabelValues("veo-3"))
	Spent("acct-hidden", "veo-3", 5)
	if got := testutil.ToFloat64(spend.WithLabelValues("veo-3")) - before; got != 5 {
		t.Fatalf("spend without account grew by %v, want 5", got)
	}
}
