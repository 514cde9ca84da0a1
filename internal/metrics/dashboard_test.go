package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Every metric the Grafana dashboard queries is one that mediagw exports, and every exported
// metric is on the dashboard. (docs/grafana/render draws the panels from a live Prometheus.)
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../docs/grafana/mediagw.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr    string `json:"expr"`
				Instant bool   `json:"instant"`
				Range   bool   `json:"range"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, true); err != nil {
		t.Fatal(err)
	}
	// Touch every collector so that Gather lists it.
	Request("e", "p", "m", 200)
	UpstreamDuration("p", "u", "e", 0)
	TaskCreated("p", "m")
	TaskFinished("p", "m", "succeeded")
	RefreshLag(0)
	CallbackDelivery(CallbackDelivered)
	SetOutboxPending(0)
	AnswerMemory(0)
	Rejected(ReasonQuota)
	Spent("a", "m", 1)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "mediagw_") {
			exported[f.GetName()] = true
		}
	}
	used := map[string]bool{}
	name := regexp.MustCompile(`mediagw_[a-z_]+`)
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			// A range query of topk is the top k at each step: over a time range it lists more
			// than k series. A "top k" panel runs it once, as an instant query.
			if strings.Contains(target.Expr, "topk(") && (!target.Instant || target.Range) {
				t.Errorf("panel %q: topk in a range query lists more than its k series; make the target instant", p.Title)
			}
			for _, m := range name.FindAllString(target.Expr, -1) {
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base := strings.TrimSuffix(m, suffix); exported[base] {
						m = base
					}
				}
				if !exported[m] {
					t.Errorf("panel %q queries %s, which mediagw does not export", p.Title, m)
				}
				used[m] = true
			}
		}
	}
	for m := range exported {
		if !used[m] {
			t.Errorf("%s is not on the dashboard", m)
		}
	}
}
