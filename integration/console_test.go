package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

const consoleCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		# the markup test's callback receiver is on loopback: tests talk to nothing else
		callbacks {
			allow_private
		}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-key
			models sim-video
		}
		key mg-console-acme {
			id acme-key
			account acme
		}
		key mg-console-beta {
			id beta-key
			account beta
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 50ms
		}
		respond 404
	}
}

http://127.0.0.1:{{console_port}} {
	mediagw_console {
		user admin {{admin_hash}}
		user alice {{alice_hash}} account acme
		member_keys {
			max 2
			quota 1000
			max_active_tasks 3
		}
		playground http://127.0.0.1:{{port}}
		chart_interval 1s
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 200ms
		running_for 200ms
		api_key sim-key
	}
}
`

// consolePasswords are the test users' passwords.
var consolePasswords = map[string]string{"admin": "operator-password", "alice": "alice-password"}

type consoleEnv struct {
	g       *gateway
	base    string // the gateway
	console string // the console site
}

func startConsole(t *testing.T) consoleEnv {
	t.Helper()
	return startConsoleWith(t, consoleCaddyfile)
}

// startConsoleWith is startConsole with a Caddyfile of the same placeholders.
func startConsoleWith(t *testing.T, caddyfile string) consoleEnv {
	t.Helper()
	return startConsoleVars(t, caddyfile, map[string]string{})
}

// startConsoleVars is startConsoleWith with more placeholders of the test's own.
func startConsoleVars(t *testing.T, caddyfile string, vars map[string]string) consoleEnv {
	t.Helper()
	vars["console_port"] = fmt.Sprint(freePort(t))
	for user, password := range consolePasswords {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		vars[user+"_hash"] = string(hash)
	}
	base, g := startSimGateway(t, caddyfile, vars)
	return consoleEnv{g: g, base: base, console: "http://127.0.0.1:" + vars["console_port"]}
}

// consoleBrowser is a console session as a browser keeps it: its cookie, and the CSRF token of
// the last page it read.
type consoleBrowser struct {
	t      *testing.T
	base   string
	cookie string
	csrf   string
	// login is the login page's pre-session cookie ("name=value"), sent with the login form.
	login string
	// keyToken is the key form's one-time token of the last page that had the form.
	keyToken string
}

var noRedirects = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

var (
	csrfField     = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	keyTokenField = regexp.MustCompile(`name="key_token" value="([^"]+)"`)
)

func (b *consoleBrowser) do(method, path string, form url.Values) (int, http.Header, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookies := strings.Trim(b.cookie+"; "+b.login, "; "); cookies != "" {
		req.Header.Set("Cookie", cookies)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, c := range resp.Cookies() {
		switch {
		case c.Name == "__Host-mediagw_console":
			b.cookie = c.Name + "=" + c.Value
		case c.Name == "__Host-mediagw_login" && c.MaxAge < 0:
			b.login = ""
		case c.Name == "__Host-mediagw_login":
			b.login = c.Name + "=" + c.Value
		}
	}
	if m := csrfField.FindStringSubmatch(string(page)); m != nil {
		b.csrf = m[1]
	}
	if m := keyTokenField.FindStringSubmatch(string(page)); m != nil {
		b.keyToken = m[1]
	}
	return resp.StatusCode, resp.Header, string(page)
}

// postLogin sends a login form as the login page does: it gets the page (for its pre-session
// cookie and token) and posts form with them.
func (b *consoleBrowser) postLogin(form url.Values) (int, http.Header, string) {
	b.t.Helper()
	if status, _, _ := b.do(http.MethodGet, "/login", nil); status != http.StatusOK {
		b.t.Fatalf("GET /login = %d", status)
	}
	form.Set("csrf", b.csrf)
	return b.do(http.MethodPost, "/login", form)
}

// post sends a form with the session's CSRF token and, to /keys, the key form's token of the last
// page that had the form unless form has one (form keeps it: a form sent again sends it again).
func (b *consoleBrowser) post(path string, form url.Values) (int, http.Header, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf)
	if path == "/keys" && form["key_token"] == nil && b.keyToken != "" {
		form.Set("key_token", b.keyToken)
	}
	return b.do(http.MethodPost, path, form)
}

func (e consoleEnv) login(t *testing.T, user string) *consoleBrowser {
	t.Helper()
	b := &consoleBrowser{t: t, base: e.console}
	status, h, page := b.postLogin(url.Values{"username": {user}, "password": {consolePasswords[user]}})
	if status != http.StatusSeeOther || b.cookie == "" {
		t.Fatalf("login of %s = %d %v %s", user, status, h, page)
	}
	if c := h.Get("Set-Cookie"); !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "Secure") || !strings.Contains(c, "SameSite=Strict") {
		t.Fatalf("session cookie = %q", c)
	}
	b.do(http.MethodGet, "/keys", nil) // a page, for its CSRF token
	return b
}

// madeKeys counts the keys of account that the admin API or the console made (not configured
// ones), as the admin API lists them.
func (e consoleEnv) madeKeys(t *testing.T, account string) int {
	t.Helper()
	r := call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/keys?account="+url.QueryEscape(account), "", nil)
	var keys []struct {
		ReadOnly bool `json:"read_only"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &keys) != nil {
		t.Fatalf("keys of %q = %d %s", account, r.status, r.body)
	}
	n := 0
	for _, k := range keys {
		if !k.ReadOnly {
			n++
		}
	}
	return n
}

// createConsoleTask creates a task with key through the gateway and returns its id.
func (e consoleEnv) createTask(t *testing.T, key, body string) string {
	t.Helper()
	r := call(t, http.MethodPost, e.base+"/api/v3/contents/generations/tasks", key, body)
	if r.status != http.StatusOK || r.field("id") == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	return r.field("id")
}

// A member of account acme sees only acme through every page and form, whatever ids they
// write into URLs or forms.
func TestConsoleMemberSeesOnlyTheirAccount(t *testing.T) {
	e := startConsole(t)
	acmeTask := e.createTask(t, "mg-console-acme", `{"model":"sim-video","content":[{"type":"text","text":"acme's lighthouse"}]}`)
	betaTask := e.createTask(t, "mg-console-beta", `{"model":"sim-video","content":[{"type":"text","text":"beta's harbour"}]}`)
	r := call(t, http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", "", `{"account":"beta"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("admin key = %d %s", r.status, r.body)
	}
	betaKeyID, betaSecret := r.field("id"), r.field("key")

	alice := e.login(t, "alice")
	for _, path := range []string{"/accounts/beta", "/tasks/" + betaTask, "/tasks/" + url.PathEscape(betaTask) + "/", "/accounts/beta/", "/upstreams"} {
		if status, _, page := alice.do(http.MethodGet, path, nil); status != http.StatusNotFound || strings.Contains(page, "beta's") {
			t.Errorf("GET %s as alice = %d", path, status)
		}
	}
	if status, _, page := alice.do(http.MethodGet, "/tasks/"+acmeTask, nil); status != http.StatusOK || !strings.Contains(page, acmeTask) {
		t.Fatalf("alice's own task = %d", status)
	}
	// The task list is alice's account's, whatever account the query names.
	status, _, page := alice.do(http.MethodGet, "/tasks?account=beta", nil)
	if status != http.StatusOK || strings.Contains(page, betaTask) || !strings.Contains(page, acmeTask) {
		t.Fatalf("task list for account=beta as alice = %d, beta's task shown: %v", status, strings.Contains(page, betaTask))
	}
	if _, _, page := alice.do(http.MethodGet, "/keys?account=beta", nil); strings.Contains(page, betaKeyID) || strings.Contains(page, "beta-key") {
		t.Fatal("alice's key list shows beta's keys")
	}
	// Revoking beta's key is answered as for an unknown key, and the key keeps working.
	if status, _, _ := alice.post("/keys/"+betaKeyID+"/revoke", nil); status != http.StatusNotFound {
		t.Fatalf("revoke of beta's key as alice = %d", status)
	}
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+betaTask, betaSecret, nil); r.status != http.StatusOK {
		t.Fatalf("beta's key after alice's revoke = %d %s", r.status, r.body)
	}
	// A key alice creates naming beta belongs to acme.
	status, _, page = alice.post("/keys", url.Values{"account": {"beta"}})
	secret := regexp.MustCompile(`id="secret" readonly value="(mg-[^"]+)"`).FindStringSubmatch(page)
	if status != http.StatusCreated || secret == nil {
		t.Fatalf("create key as alice = %d", status)
	}
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+acmeTask, secret[1], nil); r.status != http.StatusOK {
		t.Fatalf("alice's new key reads acme's task = %d %s", r.status, r.body)
	}
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+betaTask, secret[1], nil); r.status == http.StatusOK {
		t.Fatal("alice's new key reads beta's task")
	}
	// Her keys carry the operator's member limits, whatever the form says, and the account holds
	// at most two keys created in the console (its configured key aside).
	keyID := regexp.MustCompile(`Secret of ([^<]+)</label>`).FindStringSubmatch(page)
	if keyID == nil {
		t.Fatal("no key id on the answer page")
	}
	r = call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/keys/"+keyID[1], "", nil)
	var limits struct {
		Account        string
		Quota          int64
		MaxActiveTasks int64 `json:"max_active_tasks"`
	}
	if r.status != http.StatusOK {
		t.Fatalf("alice's key = %d %s", r.status, r.body)
	}
	if decodeJSON(t, r.body, &limits); limits.Account != "acme" || limits.Quota != 1000 || limits.MaxActiveTasks != 3 {
		t.Fatalf("alice's key = %s", r.body)
	}
	if status, _, _ := alice.post("/keys", url.Values{"quota": {"999999999"}, "max_active_tasks": {"1000"}}); status != http.StatusCreated {
		t.Fatalf("alice's second key = %d", status)
	}
	if status, _, page := alice.post("/keys", nil); status != http.StatusConflict || strings.Contains(page, `id="secret"`) {
		t.Fatalf("alice's third key = %d", status)
	}
	// Operator-only forms are not there for a member.
	if status, _, _ := alice.post("/accounts/beta/disable", nil); status != http.StatusNotFound {
		t.Fatalf("disable beta as alice = %d", status)
	}
	if status, _, _ := alice.post("/accounts/acme/disable", nil); status != http.StatusNotFound {
		t.Fatalf("disable acme as alice = %d", status)
	}
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+betaTask, "mg-console-beta", nil); r.status != http.StatusOK {
		t.Fatalf("beta after alice's disable = %d", r.status)
	}
	// The usage export is alice's account's only.
	if status, h, csv := alice.do(http.MethodGet, "/usage.csv?account=beta&group_by=account", nil); status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") || strings.Contains(csv, "beta") {
		t.Fatalf("usage export as alice = %d %q:\n%s", status, h.Get("Content-Type"), csv)
	}
}

// Every change needs the session's CSRF token, and a session ends at logout: a replayed form or
// cookie changes nothing.
func TestConsoleFormsNeedTheSessionsToken(t *testing.T) {
	e := startConsole(t)
	admin := e.login(t, "admin")
	other := e.login(t, "admin")
	for _, token := range []string{"", other.csrf, admin.csrf + "x"} {
		form := url.Values{"account": {"acme"}}
		if token != "" {
			form.Set("csrf", token)
		}
		if status, _, page := admin.do(http.MethodPost, "/keys", form); status != http.StatusForbidden || strings.Contains(page, `id="secret"`) {
			t.Fatalf("create with token %q = %d", token, status)
		}
	}
	if _, _, page := admin.do(http.MethodGet, "/keys", nil); strings.Count(page, "/revoke") != 0 {
		t.Fatal("a key was created without the session's token")
	}
	if status, _, _ := admin.post("/keys", url.Values{"account": {"acme"}}); status != http.StatusCreated {
		t.Fatalf("create with the token = %d", status)
	}
	cookie, csrf := admin.cookie, admin.csrf
	if status, h, _ := admin.post("/logout", nil); status != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Fatalf("logout = %d %v", status, h)
	}
	replay := &consoleBrowser{t: t, base: e.console, cookie: cookie, csrf: csrf}
	if status, h, _ := replay.do(http.MethodGet, "/keys", nil); status != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Fatalf("the logged-out cookie reads a page: %d %v", status, h)
	}
	if status, _, _ := replay.post("/keys", url.Values{"account": {"acme"}}); status != http.StatusSeeOther {
		t.Fatalf("the logged-out cookie posts a form: %d", status)
	}
	// A login form posted from another site is refused (login CSRF), and so is a form of the
	// session posted from another site with its token.
	for _, origin := range []string{"https://attacker.example", "null"} {
		req, err := http.NewRequest(http.MethodPost, e.console+"/login", strings.NewReader(url.Values{"username": {"admin"}, "password": {consolePasswords["admin"]}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Fatalf("login from Origin %s = %d %v", origin, resp.StatusCode, resp.Cookies())
		}
	}
	// A forged cookie naming another user with a real token is no session.
	forged := &consoleBrowser{t: t, base: e.console, cookie: strings.Replace(other.cookie, ".YWRtaW4.", ".YWxpY2U.", 1)}
	if status, _, _ := forged.do(http.MethodGet, "/keys", nil); status != http.StatusSeeOther {
		t.Fatalf("a cookie with another user's name = %d", status)
	}
}

// Failed logins are limited per client address: after ten, even the right password waits.
func TestConsoleLimitsFailedLogins(t *testing.T) {
	e := startConsole(t)
	b := &consoleBrowser{t: t, base: e.console}
	for i := range 10 {
		if status, _, page := b.postLogin(url.Values{"username": {"admin"}, "password": {fmt.Sprint("guess", i)}}); status != http.StatusUnauthorized || !strings.Contains(page, "wrong") {
			t.Fatalf("attempt %d = %d", i, status)
		}
	}
	status, h, _ := b.postLogin(url.Values{"username": {"admin"}, "password": {consolePasswords["admin"]}})
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || b.cookie != "" {
		t.Fatalf("login after ten failures = %d %v", status, h)
	}
}

// Markup in an account name and in a callback URL is shown as text.
func TestConsoleShowsMarkupInert(t *testing.T) {
	e := startConsole(t)
	const markup = `<script>alert(1)</script>`
	r := call(t, http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", "", `{"account":"`+markup+`"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("admin key = %d %s", r.status, r.body)
	}
	task := e.createTask(t, "mg-console-acme", `{"model":"sim-video","content":[{"type":"text","text":"<b>bold</b>"}],"callback_url":"http://127.0.0.1:`+fmt.Sprint(freePort(t))+`/cb?q=<script>alert(2)</script>"}`)
	admin := e.login(t, "admin")
	for _, path := range []string{"/", "/accounts", "/keys", "/tasks/" + task, "/tasks?account=acme", "/prices", "/accounts/acme"} {
		status, _, page := admin.do(http.MethodGet, path, nil)
		// The overview's own scripts are <script type=… and <script src=…; no other is there.
		if status != http.StatusOK || strings.Contains(page, "<script>") || strings.Contains(page, "<b>bold") {
			t.Fatalf("GET %s = %d, raw markup: %v", path, status, strings.Contains(page, "<script>"))
		}
	}
	if _, _, page := admin.do(http.MethodGet, "/accounts", nil); !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatal("the account name is not shown escaped")
	}
}

// The playground refuses a duration that is not a number, and shows a gateway's refusal with the
// gateway's status (a wrong key: 401), never as a success.
func TestConsolePlaygroundRefusals(t *testing.T) {
	e := startConsole(t)
	admin := e.login(t, "admin")
	admin.do(http.MethodGet, "/playground", nil)
	form := url.Values{"key": {"mg-console-acme"}, "model": {"sim-video"}, "prompt": {"a boat"}, "duration": {"five"}, "resolution": {"720p"}}
	if status, _, page := admin.post("/playground", form); status != http.StatusBadRequest || !strings.Contains(page, "whole number") {
		t.Fatalf("duration five = %d", status)
	}
	form.Set("duration", "5")
	form.Set("key", "mg-not-a-key")
	if status, h, page := admin.post("/playground", form); status != http.StatusUnauthorized || h.Get("Location") != "" || !strings.Contains(page, "The gateway answered 401") {
		t.Fatalf("a wrong key = %d %v", status, h)
	}
}

// A usage export with bad input (a day that is not one, from after to, an unknown dimension)
// is refused with a console page that says why, not a "CSV" download holding a JSON error.
func TestConsoleUsageCSVRefusesBadInputWithAPage(t *testing.T) {
	e := startConsole(t)
	alice := e.login(t, "alice")
	for query, says := range map[string]string{
		"from=2026-13-01":                 "YYYY-MM-DD",
		"from=2026-03-02&to=2026-03-01":   "from must not be after to",
		"group_by=key":                    "unknown dimension",
		"from=2025-01-01&to=2026-06-01":   "at most",
		"from=2026-03-01&to=2026-03-01xx": "YYYY-MM-DD",
		// read strictly, as the admin API's report: never every account's usage
		"account=%zz":                     "does not decode",
		"account=acme&account=globex":     "more than once",
		"from=2026-03-01&from=2026-03-02": "more than once",
	} {
		status, h, page := alice.do(http.MethodGet, "/usage.csv?"+query, nil)
		if status != http.StatusBadRequest || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
			h.Get("Content-Disposition") != "" || !strings.Contains(page, says) {
			t.Errorf("/usage.csv?%s = %d %q %q:\n%s", query, status, h.Get("Content-Type"), h.Get("Content-Disposition"), page)
		}
	}
	if status, h, _ := alice.do(http.MethodGet, "/usage.csv?from=2026-03-01&to=2026-03-02", nil); status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") {
		t.Fatalf("a good export = %d %q", status, h.Get("Content-Type"))
	}
	if status, h, _ := alice.do(http.MethodHead, "/usage.csv", nil); status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") {
		t.Fatalf("HEAD of the export = %d %q", status, h.Get("Content-Type"))
	}
}
