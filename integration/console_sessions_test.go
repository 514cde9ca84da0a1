package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// endsSession asserts that a console session no longer reads a page: it is sent to the login.
func endsSession(t *testing.T, b *consoleBrowser, why string) {
	t.Helper()
	if status, h, _ := b.do(http.MethodGet, "/keys", nil); status != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Fatalf("%s: the session still reads a page: %d %v", why, status, h)
	}
}

// keepsSession asserts that a console session reads a page.
func keepsSession(t *testing.T, b *consoleBrowser, why string) {
	t.Helper()
	if status, h, _ := b.do(http.MethodGet, "/keys", nil); status != http.StatusOK {
		t.Fatalf("%s: the session reads no page: %d %v", why, status, h)
	}
}

// TestConsoleSessionsEndWhenAccessEnds: every console request checks again that the session's
// member may still be there. Disabling the account ends its members' sessions (password and
// key alike) for good: enabling it again does not bring an old cookie back, and a member of a
// disabled account cannot log in. Disabling or expiring the key of a key session ends it for
// good too. A new password for a user, the user's removal from the configuration, or a new
// secret for a configured key ends their sessions for good: the old configuration back brings
// no old cookie back.
func TestConsoleSessionsEndWhenAccessEnds(t *testing.T) {
	e := startConsole(t)
	admin := "http://" + e.g.admin + "/mediagw"
	patch := func(path, body string) {
		t.Helper()
		if r := call(t, http.MethodPatch, admin+path, "", body); r.status != http.StatusOK {
			t.Fatalf("PATCH %s %s = %d %s", path, body, r.status, r.body)
		}
	}
	newKey := func() (id, secret string) {
		t.Helper()
		r := call(t, http.MethodPost, admin+"/keys", "", `{"account":"acme"}`)
		if r.status != http.StatusCreated {
			t.Fatalf("admin key = %d %s", r.status, r.body)
		}
		return r.field("id"), r.field("key")
	}

	// Disabling the account ends the sessions of its password and key members.
	alice := e.login(t, "alice")
	_, secret := newKey()
	member := e.keyLogin(t, secret)
	operator := e.login(t, "admin")
	patch("/accounts/acme", `{"disabled":true}`)
	endsSession(t, alice, "acme disabled, alice's password session")
	endsSession(t, member, "acme disabled, the key member's session")
	keepsSession(t, operator, "acme disabled, the operator's session")
	b := &consoleBrowser{t: t, base: e.console}
	if status, _, page := b.postLogin(url.Values{"username": {"alice"}, "password": {consolePasswords["alice"]}}); status != http.StatusForbidden || b.cookie != "" || !strings.Contains(page, "disabled") {
		t.Fatalf("alice's login while acme is disabled = %d, cookie %q", status, b.cookie)
	}
	// Enabling it again lets members log in anew, but brings no ended session back, even
	// where the old cookie was kept.
	aliceCookie, memberCookie := alice.cookie, member.cookie
	patch("/accounts/acme", `{"disabled":false}`)
	endsSession(t, &consoleBrowser{t: t, base: e.console, cookie: aliceCookie}, "acme enabled again, alice's old cookie")
	endsSession(t, &consoleBrowser{t: t, base: e.console, cookie: memberCookie}, "acme enabled again, the key member's old cookie")
	alice = e.login(t, "alice")
	keepsSession(t, alice, "alice's new login")

	// Disabling the key ends its session, and enabling the key brings the old cookie back no
	// more; an expiry set in the past ends the session of another key.
	id, secret := newKey()
	member = e.keyLogin(t, secret)
	memberCookie = member.cookie
	patch("/keys/"+id, `{"disabled":true}`)
	endsSession(t, member, "the key disabled")
	patch("/keys/"+id, `{"disabled":false}`)
	endsSession(t, &consoleBrowser{t: t, base: e.console, cookie: memberCookie}, "the key enabled again, the old cookie")
	id, secret = newKey()
	member = e.keyLogin(t, secret)
	patch("/keys/"+id, `{"expires":"2000-01-01T00:00:00Z"}`)
	endsSession(t, member, "the key expired")

	// A new password for alice and admin's removal from the configuration end their sessions,
	// and so does a new secret for a configured key that keeps its id (a rotation): a session
	// made with the old secret is not the new secret's.
	keepsSession(t, operator, "before the reload, the operator's session")
	static := e.keyLogin(t, "mg-console-acme")
	keepsSession(t, static, "before the reload, the configured key's session")
	hash, err := bcrypt.GenerateFromPassword([]byte("alice-new-password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(consoleCaddyfile, "\t\tuser admin {{admin_hash}}\n", "\t\tuser root {{admin_hash}}\n", 1)
	cfg = strings.Replace(cfg, "{{alice_hash}}", string(hash), 1)
	cfg = strings.Replace(cfg, "key mg-console-acme {", "key mg-console-acme-rotated {", 1)
	if cfg == consoleCaddyfile || strings.Contains(cfg, "user admin") || !strings.Contains(cfg, "-rotated") {
		t.Fatal("the console Caddyfile changed shape")
	}
	if err := e.g.reload(cfg); err != nil {
		t.Fatal(err)
	}
	// The browsers' copies of the cookies drop them when told to: keep the cookies as a thief
	// would.
	aliceCookie, operatorCookie, staticCookie := alice.cookie, operator.cookie, static.cookie
	endsSession(t, alice, "alice's password changed")
	endsSession(t, operator, "admin removed")
	endsSession(t, static, "acme-key's secret rotated in the configuration")
	keepsSession(t, e.keyLogin(t, "mg-console-acme-rotated"), "acme-key's new secret")

	// Those sessions ended for good: the configuration as it was before (alice's old password,
	// admin again, acme-key's old secret) brings none of the old cookies back.
	if err := e.g.reload(consoleCaddyfile); err != nil {
		t.Fatal(err)
	}
	endsSession(t, &consoleBrowser{t: t, base: e.console, cookie: aliceCookie}, "alice's old password back, her old cookie")
	endsSession(t, &consoleBrowser{t: t, base: e.console, cookie: operatorCookie}, "admin configured again, the old cookie")
	endsSession(t, &consoleBrowser{t: t, base: e.console, cookie: staticCookie}, "acme-key's old secret back, the old cookie")
	keepsSession(t, e.login(t, "admin"), "admin's new login")
}
