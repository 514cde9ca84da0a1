package integration

import (
	"fmt"
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
	example, err := os.ReadFile(filepath.Join(repoDir(), "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	gw, sim, admin := freePort(t), freePort(t), freePort(t)
	cfg := string(example)
	for old, repl := range map[string]string{
		"http://:8080":   fmt.Sprintf("http://:%d", gw),
		":8091":          fmt.Sprintf(":%d", sim),
		"localhost:2019": fmt.Sprintf("127.0.0.1:%d", admin),
		"./data/mediagw": filepath.Join(t.TempDir(), "mediagw"),
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("Caddyfile.example no longer contains %q; update this test", old)
		}
		cfg = strings.ReplaceAll(cfg, old, repl)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", gw)
	startCaddyProcess(t, cfg, base+"/")
	for _, port := range []int{gw, sim} {
		if addrs := listeners(t, port); len(addrs) == 0 || slices.ContainsFunc(addrs, func(a string) bool { return a != "127.0.0.1" }) {
			t.Fatalf("port %d listens on %v; the demo sites must bind to 127.0.0.1 only", port, addrs)
		}
	}

	if got := modelIDs(t, base, "mg-demo-key"); len(got) != 8 || !slices.Contains(got, "demo-seedance-1-0-pro") || !slices.Contains(got, "demo-chat") {
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
	if r := call(t, "POST", base+"/v1/upload/presign", "mg-demo-key", `{"filename":"a.png"}`); r.status != 503 {
		t.Fatalf("presign without storage = %d %s", r.status, r.body)
	}
	if r := call(t, "GET", base+"/nowhere", "mg-demo-key", nil); r.status != 404 || r.json(t)["error"] == nil {
		t.Fatalf("unknown path = %d %s", r.status, r.body)
	}
	runDocSnippets(t, base)
}
