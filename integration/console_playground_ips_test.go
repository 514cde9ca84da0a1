package integration

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsolePlaygroundKeepsAllowIPs: a key's allow_ips hold wherever the key is accepted, the
// playground included. The playground sends the pasted key to the gateway from the console's
// own address, so the gateway alone would judge the key by that address: a key allowed only
// from the gateway's host (allow_ips 127.0.0.1/32), stolen and pasted by a console user far
// away, must be refused as the gateway refuses it from there, and create no task.
func TestConsolePlaygroundKeepsAllowIPs(t *testing.T) {
	cfg := strings.Replace(consoleCaddyfile, "{{globals}}", "{{globals}}\n\tservers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t\ttrusted_proxies_strict\n\t}", 1)
	cfg = strings.Replace(cfg, "\t\tkey mg-console-acme {", "\t\tkey mg-console-local {\n\t\t\tid local-key\n\t\t\taccount acme\n\t\t\tallow_ips 127.0.0.1/32\n\t\t}\n\t\tkey mg-console-acme {", 1)
	if !strings.Contains(cfg, "trusted_proxies_strict") || !strings.Contains(cfg, "mg-console-local") {
		t.Fatal("the console Caddyfile changed shape")
	}
	e := startConsoleWith(t, cfg)
	const far = "198.51.100.9" // the browser's address, as the trusted proxy in front forwards it

	// The gateway itself refuses the key from there.
	req, err := http.NewRequest(http.MethodPost, e.base+"/api/v3/contents/generations/tasks",
		strings.NewReader(`{"model":"sim-video","content":[{"type":"text","text":"from afar"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer mg-console-local")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", far)
	if r, err := sendRequest(req); err != nil || r.status != http.StatusForbidden {
		t.Fatalf("the gateway from %s = %d %s (%v); want 403", far, r.status, r.body, err)
	}

	playground := func(b *consoleBrowser, key, forwarded string) (int, string, string) {
		t.Helper()
		b.do(http.MethodGet, "/playground", nil)
		form := url.Values{"csrf": {b.csrf}, "key": {key}, "model": {"sim-video"}, "prompt": {"from afar"}, "duration": {"5"}, "resolution": {"720p"}}
		req, err := http.NewRequest(http.MethodPost, e.console+"/playground", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", b.cookie)
		req.Header.Set("X-Forwarded-For", forwarded)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page strings.Builder
		if _, err := io.Copy(&page, resp.Body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Location"), page.String()
	}
	alice := e.login(t, "alice")
	if status, loc, page := playground(alice, "mg-console-local", far); status != http.StatusForbidden || loc != "" || !strings.Contains(page, "address") {
		t.Fatalf("the playground from %s with a key allowed only from 127.0.0.1 = %d, to %q:\n%s", far, status, loc, page)
	}
	_, _, tasks := alice.do(http.MethodGet, "/tasks", nil)
	if strings.Contains(tasks, "<code>cgt-") {
		t.Fatal("the refused playground create made a task")
	}
	// From an allowed address, and with a key without allow_ips from anywhere, it creates.
	for key, from := range map[string]string{"mg-console-local": "127.0.0.1", "mg-console-acme": far} {
		if status, loc, page := playground(alice, key, from); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/tasks/") {
			t.Fatalf("the playground with %s from %s = %d, to %q:\n%s", key, from, status, loc, page)
		}
	}
}
