package integration

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCaddyfileExample runs Caddyfile.example, the README's first command, with only its ports
// and data directory moved and no MEDIAGW_DEMO_KEY in the environment, uses it as the README
// says, and runs the README's walk-through and the SDK examples of docs/api.md against it.
func TestCaddyfileExample(t *testing.T) {
	t.Setenv("MEDIAGW_DEMO_KEY", "") // restored after the test
	if err := os.Unsetenv("MEDIAGW_DEMO_KEY"); err != nil {
		t.Fatal(err)
	}
	cfg, demo := exampleCaddyfile(t)
	gw, sim, console := demo.gateway, demo.simulator, demo.console
	base := fmt.Sprintf("http://127.0.0.1:%d", gw)
	startCaddyProcess(t, cfg, base+"/")
	for _, port := range []int{gw, sim, console} {
		if addrs := listeners(t, port); len(addrs) == 0 || slices.ContainsFunc(addrs, func(a string) bool { return a != "127.0.0.1" }) {
			t.Fatalf("port %d listens on %v; the demo sites must bind to 127.0.0.1 only", port, addrs)
		}
	}

	// The console logs in with the demo password the example's comment gives.
	demoConsole := &consoleBrowser{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", console)}
	if status, _, _ := demoConsole.postLogin(url.Values{"username": {"admin"}, "password": {"mg-demo-console"}}); status != 303 || demoConsole.cookie == "" {
		t.Fatalf("console login with the demo password = %d", status)
	}
	if got := modelIDs(t, base, "mg-demo-key"); len(got) != 13 || !slices.Contains(got, "demo-seedance-1-0-pro") || !slices.Contains(got, "demo-veo-3") || !slices.Contains(got, "demo-chat") {
		t.Fatalf("models = %v", got)
	}
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"demo-chat","messages":[{"role":"user","content":"hi"}]}`, "simulator"},
		{"/v1/chat/completions", `{"model":"demo-chat","stream":true,"messages":[]}`, "[DONE]"},
		{"/v1/embeddings", `{"model":"demo-embedding","input":"hi"}`, "embedding"},
		{"/v1/images/generations", `{"model":"demo-image","prompt":"a cat"}`, "url"},
		{"/v1/images/edits", `{"model":"demo-image","prompt":"blue","images":[{"image_url":"https://cdn.example.com/a.png"}]}`, "url"},
	} {
		if r := call(t, "POST", base+tc.path, "mg-demo-key", tc.body); r.status != 200 || !strings.Contains(string(r.body), tc.want) {
			t.Fatalf("%s = %d %s", tc.path, r.status, r.body)
		}
	}
	r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-demo-key",
		`{"model":"demo-seedance-1-0-pro","content":[{"type":"text","text":"a lighthouse at dawn"}]}`)
	id, _ := r.json(t)["id"].(string)
	if r.status != 200 || id == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", base+"/api/v3/contents/generations/tasks/"+id, "mg-demo-key", nil); r.status != 200 || r.json(t)["status"] != "queued" {
		t.Fatalf("query = %d %s", r.status, r.body)
	}
	demoVideoProviders(t, base)
	if r := call(t, "POST", base+"/v1/upload/presign", "mg-demo-key", `{"filename":"a.png"}`); r.status != 503 {
		t.Fatalf("presign without storage = %d %s", r.status, r.body)
	}
	// Only the endpoints the gateway means to serve are reachable: mediagw_route answers any
	// other path 404 itself, with no path matcher in front of it.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/nowhere", ""}, {"POST", "/v1/files", `{"model":"demo-chat"}`}, {"GET", "/v1/batches", ""},
		{"POST", "/v1/chat/completions/x", `{"model":"demo-chat","messages":[]}`}, {"GET", "/v1/responses", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		if r := call(t, c.method, base+c.path, "mg-demo-key", body); r.status != 404 || r.json(t)["error"] == nil {
			t.Fatalf("%s %s = %d %s", c.method, c.path, r.status, r.body)
		}
	}
	runDocSnippets(t, base)
}

// demoVideoProviders: the example's Veo, Kling, Wan and Sora models, which the simulator plays in
// their providers' protocols, go through the same task API as Seedance to success; the Veo and
// Sora results, which need the operator's key, stream from the task's content endpoint.
func demoVideoProviders(t *testing.T, base string) {
	t.Helper()
	tasks := base + "/api/v3/contents/generations/tasks/"
	ids := map[string]string{}
	for _, m := range []string{"demo-veo-3", "demo-kling-v2", "demo-wan2.2-t2v", "demo-hailuo-02", "demo-sora-2"} {
		r := call(t, "POST", strings.TrimSuffix(tasks, "/"), "mg-demo-key", `{"model":"`+m+`","content":[{"type":"text","text":"a lighthouse at dawn"}],"duration":8}`)
		id, _ := r.json(t)["id"].(string)
		if r.status != 200 || !strings.HasPrefix(id, "cgt-") {
			t.Fatalf("create of %s = %d %s", m, r.status, r.body)
		}
		ids[m] = id
	}
	waitFor(t, "the Veo, Kling, Wan, Hailuo and Sora tasks to succeed", func() bool {
		for m, id := range ids {
			r := call(t, "GET", tasks+id, "mg-demo-key", nil)
			if r.status != 200 || r.field("status") == "failed" {
				t.Fatalf("%s: %d %s", m, r.status, r.body)
			}
			if r.field("status") != "succeeded" {
				return false
			}
		}
		return true
	})
	for _, m := range []string{"demo-veo-3", "demo-hailuo-02", "demo-sora-2"} {
		video := call(t, "GET", tasks+ids[m]+"/content", "mg-demo-key", nil)
		if video.status != 200 || video.header.Get("Content-Type") != "video/mp4" || len(video.body) == 0 {
			t.Fatalf("the %s content = %d %q", m, video.status, video.header.Get("Content-Type"))
		}
	}
	for _, m := range []string{"demo-kling-v2", "demo-wan2.2-t2v"} {
		var answer struct {
			Content struct {
				VideoURL string `json:"video_url"`
			} `json:"content"`
		}
		decodeJSONQuiet(call(t, "GET", tasks+ids[m], "mg-demo-key", nil).body, &answer)
		if !strings.HasPrefix(answer.Content.VideoURL, "https://simulator.mediagw.invalid/videos/") {
			t.Fatalf("%s's video_url = %q", m, answer.Content.VideoURL)
		}
	}
}

// demoPorts are the loopback ports exampleCaddyfile gives the example's sites.
type demoPorts struct{ gateway, simulator, admin, console int }

// exampleCaddyfile is Caddyfile.example as written, with its ports moved to free ones and its
// store to a temporary directory, so that it runs beside other tests.
func exampleCaddyfile(t *testing.T) (string, demoPorts) {
	t.Helper()
	example, err := os.ReadFile(filepath.Join(repoDir(), "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	ports := demoPorts{freePort(t), freePort(t), freePort(t), freePort(t)}
	cfg := string(example)
	for old, repl := range map[string]string{
		"http://:8080":          fmt.Sprintf("http://:%d", ports.gateway),
		":8091":                 fmt.Sprintf(":%d", ports.simulator),
		"http://:8081":          fmt.Sprintf("http://:%d", ports.console),
		"http://127.0.0.1:8080": fmt.Sprintf("http://127.0.0.1:%d", ports.gateway),
		"localhost:2019":        fmt.Sprintf("127.0.0.1:%d", ports.admin),
		"./data/mediagw":        filepath.Join(t.TempDir(), "mediagw"),
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("Caddyfile.example no longer contains %q; update this test", old)
		}
		cfg = strings.ReplaceAll(cfg, old, repl)
	}
	return cfg, ports
}
