package integration

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDemoGatewaySurvivesHugeCounts: the demo gateway of the README runs the simulator in the
// gateway's own process, so a count the simulator believed would be the whole gateway's
// allocation. A client of the demo asks for 2^40 images and 100,000 embeddings; the simulator
// refuses both as OpenAI does (n is 1 to 10, an embeddings input at most 2,048 items), the
// refusal reaches the client in OpenAI's error shape, and the gateway still serves.
func TestDemoGatewaySurvivesHugeCounts(t *testing.T) {
	t.Parallel()
	cfg, demo := exampleCaddyfile(t)
	cfg = strings.ReplaceAll(cfg, "{env.MEDIAGW_DEMO_KEY:mg-demo-key}", "mg-demo-key")
	base := fmt.Sprintf("http://127.0.0.1:%d", demo.gateway)
	gw := startCaddyProcess(t, cfg, base+"/")

	inputs := `"` + strings.Repeat(`x","`, 100_000) + `x"`
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/images/generations", `{"model":"demo-image","prompt":"a cat","n":1099511627776}`, "n"},
		{"/v1/images/generations", `{"model":"demo-image","prompt":"a cat","n":-3}`, "n"},
		{"/v1/embeddings", `{"model":"demo-embedding","input":[` + inputs + `]}`, "input"},
	} {
		r, err := send("POST", base+tc.path, "mg-demo-key", tc.body)
		if err != nil {
			gw.kill()
			out, _ := os.ReadFile(gw.log)
			if i := bytes.Index(out, []byte("fatal error")); i >= 0 {
				out = out[i:]
			}
			t.Fatalf("%s %.60s: the gateway did not answer (%v); it died:\n%.600s", tc.path, tc.body, err, out)
		}
		e, _ := r.json(t)["error"].(map[string]any)
		if r.status != 400 || e == nil || e["param"] != tc.param {
			t.Fatalf("%s %.60s = %d %s, want 400 naming %s", tc.path, tc.body, r.status, r.body, tc.param)
		}
	}
	if r := call(t, "POST", base+"/v1/images/generations", "mg-demo-key", `{"model":"demo-image","prompt":"a cat","n":10}`); r.status != 200 || strings.Count(string(r.body), `"url"`) != 10 {
		t.Fatalf("ten images = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", base+"/v1/models", "mg-demo-key", nil); r.status != 200 {
		t.Fatalf("models after the refusals = %d %s", r.status, r.body)
	}
}
