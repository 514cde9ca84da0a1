package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/storage"
)

// fleetProtocols are the protocols the fleet's tasks may use (-protocols).
var fleetProtocols = []string{"ark", "dashscope", "kling"}

// createUpstream creates task number i of the fleet at the simulator in protocol proto and fills
// in t's id, provider, model and provider's id as a gateway's create would.
func createUpstream(sim *simulator.Simulator, proto string, i int, t *storage.Task, kling http.Header) error {
	rec := httptest.NewRecorder()
	var req *http.Request
	switch proto {
	case "dashscope":
		req = httptest.NewRequest(http.MethodPost, "/api/v1/services/aigc/video-generation/video-synthesis",
			strings.NewReader(`{"model":"wan","input":{"prompt":"x"}}`))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("X-DashScope-Async", "enable")
	case "kling":
		req = httptest.NewRequest(http.MethodPost, "/v1/videos/text2video", strings.NewReader(`{"model_name":"kling","prompt":"x"}`))
		req.Header = kling.Clone()
	default:
		req = httptest.NewRequest(http.MethodPost, "/api/v3/contents/generations/tasks",
			strings.NewReader(`{"model":"m","content":[{"type":"text","text":"x"}]}`))
		req.Header.Set("Authorization", "Bearer k")
	}
	sim.ServeHTTP(rec, req)
	var created struct {
		ID     string
		Output struct {
			TaskID string `json:"task_id"`
		}
		Data struct {
			TaskID string `json:"task_id"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil {
		return fmt.Errorf("the simulator did not create a %s task: %d %s", proto, rec.Code, rec.Body)
	}
	switch proto {
	case "dashscope":
		t.ID, t.Provider, t.Model, t.UpstreamID = fmt.Sprintf("cgt-%024x", i), "wan", "wan", created.Output.TaskID
	case "kling":
		t.ID, t.Provider, t.Model, t.UpstreamID = fmt.Sprintf("cgt-%024x", i), "kling", "kling", "text2video/"+created.Data.TaskID
	default:
		t.ID, t.Provider, t.Model = created.ID, "sim", "m"
	}
	if t.ID == "" || proto != "ark" && strings.HasSuffix(t.UpstreamID, "/") || proto != "ark" && t.UpstreamID == "" {
		return fmt.Errorf("the simulator did not create a %s task: %d %s", proto, rec.Code, rec.Body)
	}
	return nil
}

// klingCredential is the Authorization header of a Kling create (a JWT of the fleet's keys).
func klingCredential() (http.Header, error) {
	provs, err := fleetProviders("http://127.0.0.1", 0)
	if err != nil {
		return nil, err
	}
	if _, err := providers.NewCatalog(provs); err != nil {
		return nil, err
	}
	h := http.Header{}
	for _, p := range provs {
		if p.Name == "kling" {
			p.Upstreams[0].SetCredentials(h)
		}
	}
	return h, nil
}

// adaptedRead recognises a task read of DashScope (GET /api/v1/tasks/{id}) or Kling (GET
// /v1/videos/text2video/{id}) and gives the provider's id, which the bench records reads by.
func adaptedRead(path string) (proto, id string, ok bool) {
	if id, ok := strings.CutPrefix(path, "/api/v1/tasks/"); ok {
		return "dashscope", id, true
	}
	if id, ok := strings.CutPrefix(path, "/v1/videos/text2video/"); ok {
		return "kling", id, true
	}
	return "", "", false
}

// upstreamCalls counts the calls to each upstream (protocol) from each instance, per second.
type upstreamCalls struct {
	mu sync.Mutex
	// per maps instance, protocol and Unix second to the calls made in it.
	per map[callKey]int
}

type callKey struct {
	by    int
	proto string
	sec   int64
}

func newUpstreamCalls() *upstreamCalls { return &upstreamCalls{per: map[callKey]int{}} }

func (c *upstreamCalls) add(by int, proto string, at time.Time) {
	c.mu.Lock()
	c.per[callKey{by, proto, at.Unix()}]++
	c.mu.Unlock()
}

// report prints, per protocol, the calls per second to its upstream (all instances) and the most
// calls one instance made to it in one clock second, whole run and steady state (from warm,
// when set), against the upstream's max_rps (a second's worth may go at once).
func (c *upstreamCalls) report(protos []string, instances int, maxRPS float64, warm, end time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, proto := range protos {
		total, most, mostSteady := 0, 0, 0
		for k, n := range c.per {
			if k.proto != proto {
				continue
			}
			total += n
			most = max(most, n)
			if !warm.IsZero() && k.sec > warm.Unix() && k.sec < end.Unix() {
				mostSteady = max(mostSteady, n)
			}
		}
		limit := "unbounded"
		if maxRPS > 0 {
			limit = fmt.Sprintf("%.0f per instance", maxRPS)
		}
		fmt.Printf("upstream %s: %d calls; most calls by one instance in one second: %d whole run, %d steady state (max_rps %s, %d instances)\n",
			proto, total, most, mostSteady, limit, instances)
	}
}

// protocolOf tells a task's protocol by the id its reads are recorded under: an Ark task id
// (cgt-…), a Kling task id (digits), else a DashScope task id.
func protocolOf(id string) string {
	switch {
	case strings.HasPrefix(id, "cgt-"):
		return "ark"
	case strings.Trim(id, "0123456789") == "":
		return "kling"
	}
	return "dashscope"
}

// gapsByProtocol prints, per protocol, the steady state's gaps between two reads of a task
// (and from its last read to the end), as the whole-fleet figures are printed.
func gapsByProtocol(times map[string][]time.Time, warm, end time.Time, interval time.Duration) {
	gaps := map[string][]time.Duration{}
	for id, ts := range times {
		proto := protocolOf(id)
		for i, t := range ts {
			if i > 0 && !t.Before(warm) {
				gaps[proto] = append(gaps[proto], t.Sub(ts[i-1]))
			}
		}
		gaps[proto] = append(gaps[proto], end.Sub(ts[len(ts)-1]))
	}
	for _, proto := range fleetProtocols {
		g := gaps[proto]
		if len(g) == 0 {
			continue
		}
		slices.Sort(g)
		q := func(f float64) time.Duration { return g[int(f*float64(len(g)-1))].Round(time.Millisecond) }
		fmt.Printf("steady state, %s tasks: gap p50 %s  p99 %s  max %s (max / interval = %.2f)\n",
			proto, q(0.5), q(0.99), q(1), g[len(g)-1].Seconds()/interval.Seconds())
	}
}
