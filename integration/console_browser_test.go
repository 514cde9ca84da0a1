package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediagw/mediagw/internal/testbrowser"
)

// The console in a real browser (Debian's chromium): an operator logs in, creates a key and sees
// its secret once, disables and enables an account, opens a finished task and its video, and logs
// out; every page's form fields have labels, and the layout fits 1280 and 390 pixels wide.
//
// With MEDIAGW_CONSOLE_SCREENSHOTS=<dir> it also saves a screenshot of every page there (the
// ones in docs/console/ were made so).
// recentRequestsSampled finds, in the overview's chart data, a recent requests chart with samples.
var recentRequestsSampled = regexp.MustCompile(`\{"id":"requests","title":"[^"]*","unit":"[^"]*","x":\[`)

func TestConsoleInABrowser(t *testing.T) {
	e := startConsole(t)
	task := e.createTask(t, "mg-console-acme", `{"model":"sim-video","content":[{"type":"text","text":"a lighthouse at dawn"}]}`)
	waitTaskStatus(t, e.base, "mg-console-acme", task, "succeeded")
	// The recent charts sample the metrics every second (chart_interval 1s): the overview that
	// the browser loads once must come after a sample that holds the task's requests, or its
	// requests chart has nothing to draw.
	probe := e.login(t, "admin")
	waitFor(t, "a chart sample with the task's requests", func() bool {
		_, _, page := probe.do(http.MethodGet, "/", nil)
		return recentRequestsSampled.MatchString(page)
	})

	ctx := testbrowser.New(t, 1280, 900, 2*time.Minute)
	shots := os.Getenv("MEDIAGW_CONSOLE_SCREENSHOTS")
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string) bool {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return ok
	}
	heading := func() string {
		t.Helper()
		h, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	const labelled = `[...document.querySelectorAll('input:not([type=hidden]), select')].every(e => e.labels && e.labels.length > 0)`
	const fits = `document.documentElement.scrollWidth <= window.innerWidth`

	do("log in", chromedp.Navigate(e.console+"/login"), chromedp.WaitVisible(chromedp.ID("username")))
	if !eval(labelled) {
		t.Fatal("the login page has unlabelled fields")
	}
	// autofocus moves to the field once the page has loaded, which can follow its being visible.
	waitFor(t, "the login page to start in the user name", func() bool { return eval(`document.activeElement.id === 'username'`) })
	shot("login")
	// By keyboard only: type the name, Tab to the password, Enter.
	do("log in by keyboard",
		chromedp.KeyEvent("admin"), chromedp.KeyEvent("\t"),
		chromedp.KeyEvent(consolePasswords["admin"]), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.ID("chart-requests")))
	if h := heading(); h != "Overview" {
		t.Fatalf("after login the page is %q", h)
	}
	// The overview charts the gateway's own metrics with the embedded uPlot: the task's
	// requests are in the requests chart (its table has the model's column and a non-zero
	// value), and the charts are drawn (a canvas each), which the page's script does.
	do("overview charts", chromedp.WaitVisible(chromedp.CSS("#chart-requests canvas")))
	if !eval(`[...document.querySelectorAll('#chart-requests ~ details th')].some(th => th.textContent === 'sim-video')`) ||
		!eval(`[...document.querySelectorAll('#chart-requests ~ details tbody td')].some(td => Number(td.textContent) > 0)`) ||
		!eval(`document.querySelectorAll('.chart .uplot canvas').length >= 7`) {
		t.Fatal("the overview's charts do not show the task's requests, or are not drawn")
	}
	shot("overview")

	for _, page := range []struct{ path, name string }{{"/accounts", "accounts"}, {"/accounts/acme", "account"}, {"/tasks?account=acme", "tasks"},
		{"/prices", "prices"}, {"/keys", "keys"}} {
		do(page.path, chromedp.Navigate(e.console+page.path), chromedp.WaitVisible(chromedp.CSS("h1")))
		if !eval(labelled) || !eval(fits) {
			t.Fatalf("%s: unlabelled fields or wider than the window", page.path)
		}
		shot(page.name)
	}

	do("prices", chromedp.Navigate(e.console+"/prices"), chromedp.WaitVisible(chromedp.CSS("table.prices")))
	if !eval(`document.querySelector('table.prices').innerText.includes('sim-video')`) {
		t.Fatal("the prices page does not list the gateway's model")
	}
	// The task search works by keyboard: type a model into its field and press Enter.
	do("search tasks by keyboard", chromedp.Navigate(e.console+"/tasks?account=acme"), chromedp.Focus(chromedp.ID("model")),
		chromedp.KeyEvent("sim-video"), chromedp.KeyEvent("\r"))
	// The result page looks like the one the search started from: wait for its address.
	waitFor(t, "the keyboard search's result page", func() bool {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		return err == nil && strings.Contains(loc, "model=sim-video")
	})
	do("search results", chromedp.WaitVisible(chromedp.CSS("table.tasks")))
	if !eval(`document.querySelector('table.tasks').innerText.includes('` + task + `')`) {
		t.Fatal("the keyboard search's result page lacks the task")
	}

	// A key is created, and its secret is shown on that page only.
	do("create a key", chromedp.Navigate(e.console+"/keys"), chromedp.WaitVisible(chromedp.ID("account")),
		chromedp.SendKeys(chromedp.ID("account"), "acme"),
		chromedp.SendKeys(chromedp.ID("models"), "sim-*"),
		chromedp.Click(chromedp.CSS(`form[action="/keys"] button`)),
		chromedp.WaitVisible(chromedp.ID("secret")))
	secret, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("secret")))
	if err != nil || !strings.HasPrefix(secret, "mg-") {
		t.Fatalf("secret = %q, %v", secret, err)
	}
	shot("key-created")
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+task, secret, nil); r.status != http.StatusOK {
		t.Fatalf("the new key reads acme's task: %d %s", r.status, r.body)
	}
	do("keys again", chromedp.Navigate(e.console+"/keys"), chromedp.WaitVisible(chromedp.CSS("table")))
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil || strings.Contains(html, secret) {
		t.Fatalf("the secret is shown again (%v)", err)
	}

	// The account is disabled and enabled from its page.
	do("disable acme", chromedp.Navigate(e.console+"/accounts/acme"),
		chromedp.Click(chromedp.CSS(`form[action="/accounts/acme/disable"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/accounts/acme/enable"]`)))
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+task, "mg-console-acme", nil); r.status != http.StatusForbidden {
		t.Fatalf("a key of the disabled account = %d", r.status)
	}
	do("enable acme", chromedp.Click(chromedp.CSS(`form[action="/accounts/acme/enable"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/accounts/acme/disable"]`)))
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+task, "mg-console-acme", nil); r.status != http.StatusOK {
		t.Fatalf("a key of the enabled account = %d", r.status)
	}

	// An operator credits the account through its page's form; the entry and the balance show.
	do("credit acme", chromedp.Navigate(e.console+"/accounts/acme"), chromedp.WaitVisible(chromedp.ID("amount")),
		chromedp.SendKeys(chromedp.ID("amount"), "12.5"),
		chromedp.SendKeys(chromedp.ID("note"), "browser top-up"),
		chromedp.Click(chromedp.CSS(`form[action="/accounts/acme/credit"] button`)),
		chromedp.WaitVisible(chromedp.CSS("table.ledger")))
	if !eval(`document.querySelector('table.ledger').innerText.includes('browser top-up')`) || !eval(labelled) || !eval(fits) {
		t.Fatal("after the credit the account page shows no ledger entry, or has unlabelled fields or is too wide")
	}
	if r := call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/accounts/acme/balance", "", nil); r.field("balance") != "12.5" {
		t.Fatalf("balance after the console's credit: %d %s", r.status, r.body)
	}

	// The finished task shows its video.
	do("task page", chromedp.Navigate(e.console+"/tasks/"+task), chromedp.WaitReady(chromedp.CSS("video")))
	if !eval(`document.querySelector('video').getAttribute('src').startsWith('http')`) {
		t.Fatal("the task's video element has no source")
	}
	if !eval(`document.querySelectorAll('ol.timeline li').length >= 2`) || !eval(`document.querySelector('ol.timeline').innerText.includes('finished: succeeded')`) {
		t.Fatal("the task page's timeline does not show the task's creation and finish")
	}
	shot("task")

	// The playground creates a task through the gateway with a pasted key; the task's page
	// follows it (reloading itself) until it succeeds and shows its video.
	do("playground", chromedp.Navigate(e.console+"/playground"), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), "mg-console-acme"),
		chromedp.SendKeys(chromedp.ID("prompt"), "a paper boat on a pond"))
	if !eval(labelled) || !eval(fits) {
		t.Fatal("playground: unlabelled fields or wider than the window")
	}
	shot("playground")
	do("playground create", chromedp.Click(chromedp.CSS(`form[action="/playground"] button`)), chromedp.WaitVisible(chromedp.CSS("dl.facts")))
	played, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(played, "/tasks/cgt-") {
		t.Fatalf("after the playground's create the page is %q (%v)", played, err)
	}
	do("playground task succeeds", chromedp.WaitVisible(chromedp.CSS("span.status-succeeded")), chromedp.WaitReady(chromedp.CSS("video")))
	playedID := played[strings.LastIndex(played, "/")+1:]
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+playedID, "mg-console-acme", nil); r.field("status") != "succeeded" {
		t.Fatalf("the playground's task through the API: %d %s", r.status, r.body)
	}

	do("upstreams", chromedp.Navigate(e.console+"/upstreams"), chromedp.WaitVisible(chromedp.CSS("table")))
	if !eval(`document.body.innerText.includes('healthy')`) {
		t.Fatal("the upstreams page shows no healthy upstream")
	}
	shot("upstreams")

	// At 390 pixels wide no page is wider than the window, and every field still has a label.
	do("narrow", chromedp.EmulateViewport(390, 844))
	for _, page := range []struct{ path, name string }{{"/", "overview"}, {"/accounts", "accounts"}, {"/accounts/acme", "account"},
		{"/keys", "keys"}, {"/tasks?account=acme", "tasks"}, {"/tasks/" + task, "task"}, {"/prices", "prices"},
		{"/playground", "playground"}, {"/upstreams", "upstreams"}} {
		do(page.path+" at 390 px", chromedp.Navigate(e.console+page.path), chromedp.WaitVisible(chromedp.CSS("h1")))
		if !eval(fits) || !eval(labelled) {
			t.Fatalf("%s is wider than a 390-pixel window, or has unlabelled fields", page.path)
		}
		shot(page.name + "-narrow")
	}

	do("log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.ID("password")))
	do("after logout", chromedp.Navigate(e.console+"/keys"), chromedp.WaitVisible(chromedp.ID("password")))
	if !eval(fits) {
		t.Fatal("the login page is wider than a 390-pixel window")
	}
	shot("login-narrow")

	// A member logs in with one of the account's API keys, by keyboard, and lands on the account.
	do("member key login", chromedp.EmulateViewport(1280, 900), chromedp.Focus(chromedp.ID("api_key")),
		chromedp.KeyEvent("mg-console-acme"), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS("table.ledger")))
	if h := heading(); h != "Account acme" || eval(`document.body.innerText.includes('Upstreams')`) {
		t.Fatalf("the key member's first page is %q, or shows the operator's menu", h)
	}
	shot("member-account")
}

// waitTaskStatus waits until the gateway answers the task with status.
func waitTaskStatus(t *testing.T, base, key, id, status string) {
	t.Helper()
	waitFor(t, "task "+id+" "+status, func() bool {
		return call(t, http.MethodGet, base+"/api/v3/contents/generations/tasks/"+id, key, nil).field("status") == status
	})
}
