package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleKeyLoginKeepsAllowIPsBehindAProxy: behind a trusted proxy that Caddy reads
// leniently (trusted_proxies without trusted_proxies_strict), Caddy's client address is the
// leftmost of X-Forwarded-For, which the client writes itself. The gateway refuses a key with
// allow_ips unless every forwarded address is allowed; the console's login with that key must
// refuse it alike, or a stolen office-only key logs in to the console from anywhere; and the
// session it starts holds the key's allow_ips at every request, so that its cookie, stolen, is
// of no use elsewhere.
func TestConsoleKeyLoginKeepsAllowIPsBehindAProxy(t *testing.T) {
	cfg := strings.Replace(consoleCaddyfile, "{{globals}}", "{{globals}}\n\tservers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t}", 1)
	cfg = strings.Replace(cfg, "\t\tkey mg-console-acme {", "\t\tkey mg-console-office {\n\t\t\tid office-key\n\t\t\taccount acme\n\t\t\tallow_ips 203.0.113.0/24\n\t\t}\n\t\tkey mg-console-acme {", 1)
	if !strings.Contains(cfg, "trusted_proxies") || !strings.Contains(cfg, "mg-console-office") {
		t.Fatal("the console Caddyfile changed shape")
	}
	e := startConsoleWith(t, cfg)
	base, console := e.base, e.console

	spoofed := "203.0.113.7, 198.51.100.9" // the client's own claim, then what the proxy appended
	req, err := http.NewRequest(http.MethodGet, base+"/api/v3/contents/generations/tasks/cgt-none", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer mg-console-office")
	req.Header.Set("X-Forwarded-For", spoofed)
	if r, err := sendRequest(req); err != nil || r.status != http.StatusForbidden {
		t.Fatalf("the gateway with a spoofed X-Forwarded-For = %d %s (%v); want 403", r.status, r.body, err)
	}

	login := func(forwarded string) (int, string) {
		t.Helper()
		form := &consoleBrowser{t: t, base: console}
		if status, _, _ := form.do(http.MethodGet, "/login", nil); status != http.StatusOK {
			t.Fatalf("GET /login = %d", status)
		}
		req, err := http.NewRequest(http.MethodPost, console+"/login", strings.NewReader(url.Values{"api_key": {"mg-console-office"}, "csrf": {form.csrf}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", form.login)
		req.Header.Set("X-Forwarded-For", forwarded)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.Cookies() {
			if c.Name == "__Host-mediagw_console" && c.Value != "" {
				return resp.StatusCode, c.Value
			}
		}
		return resp.StatusCode, ""
	}
	if status, session := login(spoofed); status != http.StatusUnauthorized || session != "" {
		t.Fatalf("console key login with a spoofed X-Forwarded-For = %d, session %v; want 401 and none", status, session != "")
	}
	status, session := login("203.0.113.7")
	if status != http.StatusSeeOther || session == "" {
		t.Fatalf("console key login from an allowed address = %d, session %v", status, session != "")
	}

	// The session holds the key's allow_ips at every request, as the gateway holds them at
	// every call: its cookie, stolen and sent from another address (or with a spoofed
	// X-Forwarded-For), reads nothing, and the session ends.
	page := func(forwarded string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, console+"/keys", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Cookie", "__Host-mediagw_console="+session)
		req.Header.Set("X-Forwarded-For", forwarded)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Location")
	}
	if status, loc := page("203.0.113.7"); status != http.StatusOK {
		t.Fatalf("the key session from its allowed address = %d to %q", status, loc)
	}
	for _, from := range []string{"203.0.113.7, 198.51.100.9", "198.51.100.9", "203.0.113.7"} {
		if status, loc := page(from); status != http.StatusSeeOther || loc != "/login" {
			t.Fatalf("the key session's cookie from %s = %d to %q; want the login page", from, status, loc)
		}
	}
}
