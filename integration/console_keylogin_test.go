package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// keyLogin logs in to the console with an API key and returns the session.
func (e consoleEnv) keyLogin(t *testing.T, key string) *consoleBrowser {
	t.Helper()
	b := &consoleBrowser{t: t, base: e.console}
	status, h, page := b.postLogin(url.Values{"api_key": {key}})
	if status != http.StatusSeeOther || b.cookie == "" {
		t.Fatalf("key login = %d %v %s", status, h, page)
	}
	if strings.Contains(b.cookie, key) {
		t.Fatal("the session cookie carries the API key")
	}
	b.do(http.MethodGet, "/keys", nil) // a page, for its CSRF token
	return b
}

// A member who logs in with one of acme's API keys sees acme only: another account's task,
// account page and key are answered 404 whatever the URL or form names, a form replayed without
// the session's token changes nothing, and revoking the key through the admin API ends the
// session. A wrong key gets the login page's 401, never a session.
func TestConsoleMemberLogsInWithAKey(t *testing.T) {
	e := startConsole(t)
	acmeTask := e.createTask(t, "mg-console-acme", `{"model":"sim-video","content":[{"type":"text","text":"acme's lighthouse"}]}`)
	betaTask := e.createTask(t, "mg-console-beta", `{"model":"sim-video","content":[{"type":"text","text":"beta's harbour"}]}`)
	r := call(t, http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", "", `{"account":"acme"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("admin key = %d %s", r.status, r.body)
	}
	keyID, secret := r.field("id"), r.field("key")

	b := &consoleBrowser{t: t, base: e.console}
	if status, _, page := b.postLogin(url.Values{"api_key": {"mg-not-a-key"}}); status != http.StatusUnauthorized || b.cookie != "" || !strings.Contains(page, "cannot log in") {
		t.Fatalf("a wrong key = %d, cookie %q", status, b.cookie)
	}

	m := e.keyLogin(t, secret)
	if status, h, _ := m.do(http.MethodGet, "/", nil); status != http.StatusSeeOther || h.Get("Location") != "/accounts/acme" {
		t.Fatalf("the key member's overview = %d %v", status, h)
	}
	if status, _, page := m.do(http.MethodGet, "/tasks/"+acmeTask, nil); status != http.StatusOK || !strings.Contains(page, "acme&#39;s lighthouse") && !strings.Contains(page, acmeTask) {
		t.Fatalf("acme's task as the key member = %d", status)
	}
	// The account page charts the account's own days: its model's column is there.
	if status, _, page := m.do(http.MethodGet, "/accounts/acme", nil); status != http.StatusOK || !strings.Contains(page, `id="chart-days-requests"`) || !strings.Contains(page, "sim-video</th>") {
		t.Fatalf("acme's account page as the key member = %d, without its daily charts", status)
	}
	for _, path := range []string{"/tasks/" + betaTask, "/accounts/beta", "/upstreams", "/accounts/beta/ledger"} {
		if status, _, page := m.do(http.MethodGet, path, nil); status != http.StatusNotFound || strings.Contains(page, "beta&#39;s") {
			t.Errorf("GET %s as acme's key member = %d", path, status)
		}
	}
	if _, _, page := m.do(http.MethodGet, "/tasks?account=beta", nil); strings.Contains(page, betaTask) {
		t.Fatal("the key member's task list shows beta's task")
	}
	if status, _, _ := m.post("/keys/beta-key/revoke", nil); status != http.StatusNotFound {
		t.Fatalf("revoking beta's key as acme's key member = %d", status)
	}
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+betaTask, "mg-console-beta", nil); r.status != http.StatusOK {
		t.Fatalf("beta's key after the member's revoke = %d", r.status)
	}
	// A form replayed without its token creates nothing.
	if status, _, page := m.do(http.MethodPost, "/keys", url.Values{"account": {"acme"}}); status != http.StatusForbidden || strings.Contains(page, `id="secret"`) {
		t.Fatalf("a key form without the token = %d", status)
	}

	// Revoking the key ends the session at its next request.
	if r := call(t, http.MethodDelete, "http://"+e.g.admin+"/mediagw/keys/"+keyID, "", nil); r.status/100 != 2 {
		t.Fatalf("revoke = %d %s", r.status, r.body)
	}
	if status, h, _ := m.do(http.MethodGet, "/accounts/acme", nil); status != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Fatalf("the revoked key's session reads a page: %d %v", status, h)
	}
}
