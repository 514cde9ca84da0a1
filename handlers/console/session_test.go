package console

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A session ends after SessionIdle without use and SessionMax after its login, whatever its use.
func TestSessionExpires(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	cookie := c.login("admin")
	for range 6 { // used every 9 minutes: alive past the idle time, up to the maximum
		c.clock = c.clock.Add(9 * time.Minute)
		if !c.signedIn(cookie) {
			t.Fatalf("a session used every 9 minutes ended at %v", c.clock)
		}
	}
	c.clock = c.clock.Add(9 * time.Minute) // 63 minutes after login: past SessionMax
	if c.signedIn(cookie) {
		t.Fatal("a session outlived SessionMax")
	}

	idle := c.login("admin")
	c.clock = c.clock.Add(testIdle + time.Second)
	if c.signedIn(idle) {
		t.Fatal("a session outlived SessionIdle without use")
	}
}

// A cookie whose token, user, login time or credential digest was changed is no session; nor
// is one after logout, or of a user no longer configured. The user configured again with the
// same password hash brings that cookie back no more.
func TestSessionCookieTampering(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	alice := c.login("alice")
	parts := strings.Split(strings.TrimPrefix(alice, cookieName+"="), ".")
	if len(parts) != 4 {
		t.Fatalf("session cookie %q", alice)
	}
	token, user, since, digest := parts[0], parts[1], parts[2], parts[3]
	secs, err := strconv.ParseInt(since, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	admin64 := base64.RawURLEncoding.EncodeToString([]byte("admin"))
	other := []byte(token)
	other[0] ^= 1
	otherDigest := []byte(digest)
	otherDigest[0] ^= 1
	join := func(p ...string) string { return strings.Join(p, ".") }
	for name, forged := range map[string]string{
		"another user":       join(token, admin64, since, digest),
		"another user's own": join(token, admin64, since, credentialDigest(c.h.Users["admin"])),
		"another login time": join(token, user, strconv.FormatInt(secs+1, 10), digest),
		"another token":      join(string(other), user, since, digest),
		"another digest":     join(token, user, since, string(otherDigest)),
		"no digest":          join(token, user, since),
		"no login time":      join(token, user),
		"short token":        join(token[1:], user, since, digest),
		"junk":               "x",
		"empty user":         join(token, "", since, digest),
		"a fifth part":       join(token, user, since, digest, digest),
	} {
		if c.signedIn(cookieName + "=" + forged) {
			t.Errorf("a cookie with %s is a session", name)
		}
	}
	if !c.signedIn(alice) {
		t.Fatal("the real cookie is no session")
	}

	configured := c.h.Users["alice"]
	delete(c.h.Users, "alice")
	if c.signedIn(alice) {
		t.Fatal("a user removed from the configuration keeps their session")
	}
	c.h.Users["alice"] = configured
	if c.signedIn(alice) {
		t.Fatal("a user configured again with the same password hash got the removed user's session back")
	}
}

// A session is the user's as configured when they logged in: a new password hash or another
// account for the user in the configuration ends it for good (the old hash back does not bring
// it back).
func TestSessionEndsWhenTheUserChanges(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	cookie := c.login("alice")
	old := c.h.Users["alice"]
	u := old
	u.PasswordHash = hashPassword(t, "a new password", bcryptTestCost)
	c.h.Users["alice"] = u
	if c.signedIn(cookie) {
		t.Fatal("a session survived its user's new password")
	}
	c.h.Users["alice"] = User{Name: "alice", PasswordHash: old.PasswordHash, Account: old.Account}
	if c.signedIn(cookie) {
		t.Fatal("the old password hash back brought the ended session back")
	}
	cookie = c.login("admin")
	c.h.Users["admin"] = User{Name: "admin", PasswordHash: c.h.Users["admin"].PasswordHash, Account: "acme"}
	if c.signedIn(cookie) {
		t.Fatal("an operator's session became a member's")
	}
}

// Logout ends the session for every copy of its cookie; it needs the CSRF token.
func TestLogout(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	cookie := c.login("admin")
	if resp, _ := c.request(http.MethodPost, "/logout", cookie, url.Values{}, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("logout without the CSRF token = %d", resp.StatusCode)
	}
	if !c.signedIn(cookie) {
		t.Fatal("a refused logout ended the session")
	}
	s := c.sessionOf(cookie)
	resp, _ := c.request(http.MethodPost, "/logout", cookie, url.Values{"csrf": {s.csrf()}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("logout = %d %v", resp.StatusCode, resp.Header)
	}
	if c.signedIn(cookie) {
		t.Fatal("the cookie is a session after logout")
	}
}

// sessionOf reads the session of cookie as the handler does.
func (c *testConsole) sessionOf(cookie string) *session {
	c.t.Helper()
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Cookie", cookie)
	s, ok := c.h.session(discard{}, r)
	if !ok {
		c.t.Fatal("no session")
	}
	return s
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
