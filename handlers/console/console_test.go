package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/storage"
)

// testConsole is a console on a real (Badger) store with a clock the test moves.
type testConsole struct {
	t     *testing.T
	h     *Handler
	clock time.Time
}

const (
	testPassword = "right-password"
	testIdle     = 10 * time.Minute
	testMax      = time.Hour
)

func newTestConsole(t *testing.T, cost int) *testConsole {
	t.Helper()
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	return newTestConsoleOn(t, store, cost)
}

// newTestConsoleOn is a console on store, with the users admin (an operator) and alice (of
// account acme), whose hashes have cost.
func newTestConsoleOn(t *testing.T, store storage.Store, cost int) *testConsole {
	t.Helper()
	meter := accounting.NewMeter(store, time.Hour, zap.NewNop())
	t.Cleanup(meter.Close) // runs before the store's Close
	c := &testConsole{t: t, clock: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c.h = &Handler{Store: store, Keys: &keyadmin.Handler{Store: store, Meter: meter}, Users: map[string]User{},
		SessionIdle: testIdle, SessionMax: testMax, Now: func() time.Time { return c.clock }}
	for _, u := range []User{{Name: "admin"}, {Name: "alice", Account: "acme"}} {
		u.PasswordHash = hashPassword(t, testPassword, cost)
		c.h.Users[u.Name] = u
	}
	if err := c.h.Provision(); err != nil {
		t.Fatal(err)
	}
	return c
}

func hashPassword(t *testing.T, password string, cost int) []byte {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		t.Fatal(err)
	}
	return hash
}

// request serves one request; cookie is sent when not empty; the answer's body is returned read.
func (c *testConsole) request(method, target, cookie string, form url.Values, header http.Header) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	r.RemoteAddr = "192.0.2.10:4711"
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for name, values := range header {
		r.Header[name] = values
	}
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	resp := w.Result()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, string(page)
}

// postLogin posts form to the login page as the page's own form does: with the token of the
// pre-session cookie that a GET of the page sets, and that cookie.
func (c *testConsole) postLogin(form url.Values, header http.Header) (*http.Response, string) {
	c.t.Helper()
	cookie, token := c.loginForm()
	form.Set("csrf", token)
	return c.request(http.MethodPost, "/login", cookie, form, header)
}

// loginForm gets the login page and returns its pre-session cookie ("name=value") and the token
// its forms carry.
func (c *testConsole) loginForm() (cookie, token string) {
	c.t.Helper()
	resp, page := c.request(http.MethodGet, "/login", "", nil, nil)
	for _, ck := range resp.Cookies() {
		if ck.Name == loginCookieName {
			cookie = ck.Name + "=" + ck.Value
		}
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if cookie == "" || m == nil {
		c.t.Fatalf("the login page sets no pre-session cookie or token: %d %v", resp.StatusCode, resp.Cookies())
	}
	return cookie, m[1]
}

// login logs user in and returns the session cookie ("name=value").
func (c *testConsole) login(user string) string {
	c.t.Helper()
	resp, page := c.postLogin(url.Values{"username": {user}, "password": {testPassword}}, nil)
	for _, ck := range resp.Cookies() {
		if ck.Name == cookieName && ck.Value != "" {
			return ck.Name + "=" + ck.Value
		}
	}
	c.t.Fatalf("login of %s = %d %s", user, resp.StatusCode, page)
	return ""
}

// signedIn reports whether cookie is a live session: the task search page answers 200 for one
// and sends anyone else to the login page.
func (c *testConsole) signedIn(cookie string) bool {
	c.t.Helper()
	resp, _ := c.request(http.MethodGet, "/tasks", cookie, nil, nil)
	switch resp.StatusCode {
	case http.StatusOK:
		return true
	case http.StatusSeeOther:
		if loc := resp.Header.Get("Location"); loc != "/login" {
			c.t.Fatalf("redirect to %q", loc)
		}
		return false
	}
	c.t.Fatalf("GET /tasks = %d", resp.StatusCode)
	return false
}
