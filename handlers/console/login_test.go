package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// bcryptTestCost keeps the tests' hashes fast.
const bcryptTestCost = 4

// A form posted to the login page from another site is refused: it would log the victim's
// browser into the attacker's account (login CSRF). So is any other cross-site POST, even one
// that carries a valid CSRF token.
func TestCrossSitePostsAreRefused(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	form := url.Values{"username": {"admin"}, "password": {testPassword}}
	for name, h := range map[string]http.Header{
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": {"cross-site"}},
		"another Origin":            {"Origin": {"https://attacker.example"}},
		"an opaque Origin":          {"Origin": {"null"}},
	} {
		resp, page := c.postLogin(form, h)
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("login with %s = %d, cookies %v: %s", name, resp.StatusCode, resp.Cookies(), page)
		}
	}
	same := http.Header{"Origin": {"http://example.com"}, "Sec-Fetch-Site": {"same-origin"}}
	if resp, page := c.postLogin(form, same); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login from the console's own page = %d %s", resp.StatusCode, page)
	}

	cookie := c.login("admin")
	csrf := c.sessionOf(cookie).csrf()
	resp, _ := c.request(http.MethodPost, "/logout", cookie, url.Values{"csrf": {csrf}}, http.Header{"Sec-Fetch-Site": {"cross-site"}})
	if resp.StatusCode != http.StatusForbidden || !c.signedIn(cookie) {
		t.Fatalf("a cross-site logout with the token = %d", resp.StatusCode)
	}
}

// An unknown user name is refused after as much work as a wrong password: the comparison runs
// against a hash as costly as the configured users' (here 12, above bcrypt's default 10).
func TestUnknownUserTakesAsLongAsAWrongPassword(t *testing.T) {
	c := newTestConsole(t, 12)
	timing := func(user string) time.Duration {
		start := time.Now()
		resp, page := c.postLogin(url.Values{"username": {user}, "password": {"wrong"}}, nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "The user name or password is wrong.") {
			t.Fatalf("login of %s = %d", user, resp.StatusCode)
		}
		return time.Since(start)
	}
	// The fastest of three tries each, taken in turns: other work on the machine (the rest of
	// the suite) slows single tries, of either kind, by more than a bcrypt check takes.
	known, unknown := time.Hour, time.Hour
	for range 3 {
		known, unknown = min(known, timing("admin")), min(unknown, timing("nobody"))
	}
	if unknown < known/2 {
		t.Fatalf("a wrong password takes %v, an unknown user %v: the user names can be told apart", known, unknown)
	}
}

// Without a ClientIP function (no trusted proxy) the login limit counts the connection's
// address: a client writing X-Forwarded-For gets no new allowance.
func TestLoginLimitIgnoresForwardedFor(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	for i := range loginAttempts {
		h := http.Header{"X-Forwarded-For": {"198.51.100." + string(rune('1'+i%9))}}
		resp, _ := c.postLogin(url.Values{"username": {"user" + string(rune('a'+i))}, "password": {"x"}}, h)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("attempt %d = %d", i, resp.StatusCode)
		}
	}
	h := http.Header{"X-Forwarded-For": {"203.0.113.9"}}
	resp, _ := c.postLogin(url.Values{"username": {"admin"}, "password": {testPassword}}, h)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("login past the limit with a new X-Forwarded-For = %d", resp.StatusCode)
	}
	c.clock = c.clock.Add(loginWindow + time.Second)
	if resp, _ := c.postLogin(url.Values{"username": {"admin"}, "password": {testPassword}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login after the window = %d", resp.StatusCode)
	}
}

// An IPv6 client holds a whole /64 and so many addresses: its login attempts count together.
// A user name, however long, names one bounded rate window.
func TestLoginLimitCountsAnIPv6Network(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	var addr string
	c.h.ClientIP = func(*http.Request) string { return addr }
	for i := range loginAttempts {
		addr = fmt.Sprintf("2001:db8:1:2::%x", i+1)
		resp, _ := c.postLogin(url.Values{"username": {fmt.Sprint("user", i)}, "password": {"x"}}, nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("attempt %d = %d", i, resp.StatusCode)
		}
	}
	addr = "2001:db8:1:2:ffff::1"
	if resp, _ := c.postLogin(url.Values{"username": {"admin"}, "password": {testPassword}}, nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("an 11th address of the same /64 = %d", resp.StatusCode)
	}
	addr = "2001:db8:1:3::1"
	if resp, _ := c.postLogin(url.Values{"username": {"admin"}, "password": {testPassword}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("another /64 = %d", resp.StatusCode)
	}
	if w := userWindow(strings.Repeat("n", 60000)); len(w) > 100 {
		t.Fatalf("a long user name's window is %d bytes long", len(w))
	}
}

// The login form carries a token bound to a pre-session cookie (HttpOnly, Secure,
// SameSite=Strict, __Host-): a login posted without the token, without the cookie, or with
// another cookie's token is refused with no session, by user name or by API key; the right
// pair logs in and ends the pre-session cookie.
func TestLoginNeedsItsFormToken(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	resp, _ := c.request(http.MethodGet, "/login", "", nil, nil)
	var pre *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == loginCookieName {
			pre = ck
		}
	}
	if pre == nil || !pre.HttpOnly || !pre.Secure || pre.SameSite != http.SameSiteStrictMode || pre.Path != "/" || pre.Domain != "" {
		t.Fatalf("pre-session cookie = %+v", pre)
	}
	cookie, token := c.loginForm()
	otherCookie, otherToken := c.loginForm()
	if cookie == otherCookie || token == otherToken {
		t.Fatal("two login pages share a pre-session token")
	}
	for name, tc := range map[string]struct {
		cookie string
		form   url.Values
	}{
		"no token":            {cookie, url.Values{"username": {"admin"}, "password": {testPassword}}},
		"no cookie":           {"", url.Values{"username": {"admin"}, "password": {testPassword}, "csrf": {token}}},
		"another's token":     {cookie, url.Values{"username": {"admin"}, "password": {testPassword}, "csrf": {otherToken}}},
		"a key, no token":     {cookie, url.Values{"api_key": {"mg-anything"}}},
		"an empty token":      {cookie, url.Values{"username": {"admin"}, "password": {testPassword}, "csrf": {""}}},
		"a session's token":   {cookie, url.Values{"username": {"admin"}, "password": {testPassword}, "csrf": {c.sessionOf(c.login("admin")).csrf()}}},
		"the cookie as token": {cookie, url.Values{"username": {"admin"}, "password": {testPassword}, "csrf": {strings.TrimPrefix(cookie, loginCookieName+"=")}}},
	} {
		resp, page := c.request(http.MethodPost, "/login", tc.cookie, tc.form, nil)
		if resp.StatusCode != http.StatusForbidden || sessionCookie(resp) != "" || !strings.Contains(page, "did not come from the console") {
			t.Errorf("login with %s = %d, session %q", name, resp.StatusCode, sessionCookie(resp))
		}
	}
	resp, _ = c.request(http.MethodPost, "/login", cookie, url.Values{"username": {"admin"}, "password": {testPassword}, "csrf": {token}}, nil)
	if resp.StatusCode != http.StatusSeeOther || sessionCookie(resp) == "" {
		t.Fatalf("login with the form's token = %d", resp.StatusCode)
	}
	ended := false
	for _, ck := range resp.Cookies() {
		ended = ended || (ck.Name == loginCookieName && ck.MaxAge < 0)
	}
	if !ended {
		t.Fatalf("the login does not end the pre-session cookie: %v", resp.Cookies())
	}
}
