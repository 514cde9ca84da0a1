package integration

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediagw/mediagw/internal/testbrowser"
)

// browserTab drives one console tab in a real browser for a test.
type browserTab struct {
	t       *testing.T
	ctx     context.Context
	console string
}

func (b browserTab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b browserTab) eval(expr string) bool {
	b.t.Helper()
	ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return ok
}

// waitPath waits until the tab's address contains part.
func (b browserTab) waitPath(part string) {
	b.t.Helper()
	waitFor(b.t, "an address with "+part, func() bool {
		loc, err := chromedp.Run(b.ctx, chromedp.Location())
		return err == nil && strings.Contains(loc, part)
	})
}

// shot saves a screenshot of the page as name.png in MEDIAGW_CONSOLE_SCREENSHOTS, when set.
func (b browserTab) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("MEDIAGW_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// login logs user in by keyboard from the login page and waits for the first page's selector.
func (b browserTab) login(user, password, landing string) {
	b.t.Helper()
	b.do("log in as "+user, chromedp.Navigate(b.console+"/login"), chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.Focus(chromedp.ID("username")), chromedp.KeyEvent(user), chromedp.KeyEvent("\t"),
		chromedp.KeyEvent(password), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS(landing)))
}

// In a real browser: a login form posted without its token is refused and starts no session;
// the keys list pages by keyboard through its next and previous links; the operator's task
// search without an account shows every account's tasks, a member's only their own.
func TestConsolePagedListsAndLoginTokenInABrowser(t *testing.T) {
	e := startConsole(t)
	for range 60 {
		if r := call(t, http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", "", `{"account":"acme"}`); r.status != http.StatusCreated {
			t.Fatalf("create a key: %d %s", r.status, r.body)
		}
	}
	taskA := e.createTask(t, "mg-console-acme", `{"model":"sim-video","content":[{"type":"text","text":"acme's lighthouse"}]}`)
	taskB := e.createTask(t, "mg-console-beta", `{"model":"sim-video","content":[{"type":"text","text":"beta's harbour"}]}`)
	b := browserTab{t: t, ctx: testbrowser.New(t, 1280, 900, 2*time.Minute), console: e.console}

	// The login form without its token: the page's own form, its hidden token removed.
	b.do("login without the token", chromedp.Navigate(e.console+"/login"), chromedp.WaitVisible(chromedp.ID("username")))
	if !b.eval(`(() => { const f = document.querySelector('form[aria-labelledby=login-user] input[name=csrf]'); if (!f || !f.value) return false; f.remove(); return true })()`) {
		t.Fatal("the login form carries no token")
	}
	b.do("post it", chromedp.Focus(chromedp.ID("username")), chromedp.KeyEvent("admin"), chromedp.KeyEvent("\t"),
		chromedp.KeyEvent(consolePasswords["admin"]), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS("p.error")))
	if !b.eval(`document.querySelector('p.error').innerText.includes('did not come from the console')`) {
		t.Fatal("a login without its token is not refused as such")
	}
	b.do("no session", chromedp.Navigate(e.console+"/keys"), chromedp.WaitVisible(chromedp.ID("password")))
	b.waitPath("/login")

	// With the form as served, the login works; the keys list is paged by keyboard.
	b.login("admin", consolePasswords["admin"], "#chart-requests")
	rows := `document.querySelectorAll('table tbody tr').length`
	firstKey := `document.querySelector('table tbody td code').innerText`
	b.do("keys", chromedp.Navigate(e.console+"/keys"), chromedp.WaitVisible(chromedp.CSS(`a[rel=next]`)))
	first, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](firstKey))
	if err != nil || !b.eval(rows+` === 50`) || b.eval(`!!document.querySelector('a[rel=prev]')`) {
		t.Fatalf("the first keys page: %v, or not 50 rows, or a previous link", err)
	}
	b.shot("keys-paged")
	b.do("next page by keyboard", chromedp.Focus(chromedp.CSS(`a[rel=next]`)), chromedp.KeyEvent("\r"))
	b.waitPath("after=")
	b.do("second page", chromedp.WaitVisible(chromedp.CSS(`a[rel=prev]`)))
	if !b.eval(rows+` === 12`) || b.eval(`!!document.querySelector('a[rel=next]')`) {
		t.Fatal("the second keys page does not hold the last 12 keys (60 stored, 2 configured), or links further")
	}
	b.do("previous page by keyboard", chromedp.Focus(chromedp.CSS(`a[rel=prev]`)), chromedp.KeyEvent("\r"))
	b.waitPath("before=")
	b.do("first page again", chromedp.WaitVisible(chromedp.CSS(`a[rel=next]`)))
	if again, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](firstKey)); err != nil || again != first || !b.eval(rows+` === 50`) {
		t.Fatalf("back on the first page: %q (was %q), %v", again, first, err)
	}

	// Every account's tasks, without naming one.
	b.do("tasks of every account", chromedp.Navigate(e.console+"/tasks"), chromedp.WaitVisible(chromedp.CSS("table.tasks")))
	for _, want := range []string{taskA, taskB, "acme", "beta", "Tasks of every account"} {
		if !b.eval(`document.body.innerText.includes(` + strconv.Quote(want) + `)`) {
			t.Fatalf("the search across accounts lacks %s", want)
		}
	}
	b.shot("tasks-all")
	b.do("log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.ID("password")))

	// A member: beta named in the search, or beta's task in the address, reaches nothing.
	b.login("alice", consolePasswords["alice"], `nav[aria-label="Main"]`)
	b.do("alice's search for beta", chromedp.Navigate(e.console+"/tasks?account=beta"), chromedp.WaitVisible(chromedp.CSS("table.tasks")))
	if !b.eval(`document.body.innerText.includes(`+strconv.Quote(taskA)+`)`) || b.eval(`document.body.innerText.includes(`+strconv.Quote(taskB)+`)`) {
		t.Fatal("alice's search naming beta shows beta's task, or not acme's")
	}
	b.do("beta's task by address", chromedp.Navigate(e.console+"/tasks/"+taskB), chromedp.WaitVisible(chromedp.CSS("h1")))
	if !b.eval(`document.querySelector('h1').innerText === 'Not Found'`) || b.eval(`document.body.innerText.includes('beta')`) {
		t.Fatal("alice opens beta's task by its address")
	}
}
