package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediagw/mediagw/internal/testbrowser"
)

// hostileConsoleCaddyfile serves a scripted Ark upstream ({{up_url}}, answersUpstream) to an
// account whose name is markup, and a console whose members create keys with a monthly budget.
const hostileConsoleCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark-answers {
			base_url {{up_url}}/api/v3
			api_key arkop7f3c9e1d5b2a4068
			models video-answers
		}
		price video-answers {
			second 0.01
			max_seconds 30
		}
		key mg-hostile-member {
			id hostile-key
			account "<img id=xss-account src=x>"
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 10ms
		}
		respond 404
	}
}

http://127.0.0.1:{{console_port}} {
	mediagw_console {
		user admin {{admin_hash}}
		member_keys {
			max 3
			budget 25.5 month
			max_active_tasks 2
		}
	}
}
`

// noInjected is true when the page holds no element that a value written into it made: every
// hostile value carries an element whose id starts with xss-.
const noInjected = `document.querySelectorAll('[id^="xss-"]').length === 0`

// In a real browser, every value a customer or an upstream controls is shown as text, to the
// account's member (logged in with its key) and to the operator, on every page that shows it: the
// account's name, a ledger note, the error code and message of the provider's answer (a task's
// prompt too, which no page shows); no element of theirs is made. The pages cannot be framed. A
// failed task's page states its error, and its last answer reads as the provider wrote it; the
// keys page shows each key's limits as the admin API gives them (a monthly budget of 25.5, at most
// 2 tasks at once). Before the fix the error was only in the last answer, written as \u003c
// escapes, and the keys page showed no limits, so a member could not see the budget of the keys
// they create.
func TestConsoleShowsHostileValuesAsTextInABrowser(t *testing.T) {
	up := &answersUpstream{answers: map[string]answerScript{}}
	srv := startFake(t, up)
	up.base = srv.URL
	e := startConsoleVars(t, hostileConsoleCaddyfile, map[string]string{"up_url": srv.URL})
	const account = "<img id=xss-account src=x>"

	req, err := http.NewRequest(http.MethodPost, "http://"+e.g.admin+"/mediagw/accounts/"+url.PathEscape(account)+"/credit",
		strings.NewReader(`{"amount":"3.25","note":"<img id=xss-note src=x> top-up"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "hostile-credit")
	if r := do(t, req); r.status != http.StatusOK {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	task := e.createTask(t, "mg-hostile-member", `{"model":"video-answers","content":[{"type":"text","text":"<img id=xss-prompt src=x> a harbour"}],"duration":5}`)
	up.set(task, http.StatusOK, `{"id":"`+task+`","model":"video-answers","status":"failed","error":{"code":"<b id=xss-code>Refused</b>","message":"<img id=xss-error src=x> the upstream's own words"},"content":{}}`)
	waitTaskStatus(t, e.base, "mg-hostile-member", task, "failed")

	// Framing: every answer forbids it, the login page, a page and an error page alike.
	for _, path := range []string{"/login", "/keys", "/no-such-page"} {
		req, err := http.NewRequest(http.MethodGet, e.console+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("GET %s may be framed: %v", path, resp.Header)
		}
	}

	b := browserTab{t: t, ctx: testbrowser.New(t, 1280, 900, 2*time.Minute), console: e.console}
	b.do("key login", chromedp.Navigate(e.console+"/login"), chromedp.WaitVisible(chromedp.ID("api_key")),
		chromedp.Focus(chromedp.ID("api_key")), chromedp.KeyEvent("mg-hostile-member"), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("table.ledger")))
	accountPage := "/accounts/" + url.PathEscape(account)
	shows := func(who string, pages map[string][]string) {
		t.Helper()
		for path, texts := range pages {
			b.do(path, chromedp.Navigate(e.console+path), chromedp.WaitVisible(chromedp.CSS("h1")))
			if !b.eval(noInjected) {
				t.Errorf("%s's %s holds an element a hostile value made", who, path)
			}
			for _, text := range texts {
				if !b.eval(`document.body.innerText.includes(` + jsString(text) + `)`) {
					page, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText`))
					t.Errorf("%s's %s does not show %q as text:\n%s", who, path, text, page)
				}
			}
		}
	}
	member := map[string][]string{
		accountPage:      {account, "<img id=xss-note src=x> top-up", "3.25"},
		"/tasks":         {task},
		"/tasks/" + task: {account, "Error\n<b id=xss-code>Refused</b>: <img id=xss-error src=x> the upstream's own words", `"message": "<img id=xss-error src=x> the upstream's own words"`},
		"/keys":          {account, "hostile-key"},
		"/prices":        {"video-answers"},
	}
	shows("the member", member)

	// The member creates a key: it carries the configured limits, shown as the admin API has them.
	b.do("create a key", chromedp.Navigate(e.console+"/keys"), chromedp.WaitVisible(chromedp.ID("models")),
		chromedp.Focus(chromedp.ID("models")), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("secret")))
	id, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('label[for=secret]').innerText.replace('Secret of ', '')`))
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/keys/"+id, "", nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"budget":{"amount":"25.5","period":"month"}`) {
		t.Fatalf("the admin API's view of the member's key %s = %d %s", id, r.status, r.body)
	}
	limits := `[...document.querySelectorAll('table tbody tr')].find(tr => tr.innerText.includes(` + jsString(id) + `)).cells[4].innerText`
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](limits))
	if err != nil || got != "budget 25.5 a UTC month; at most 2 tasks at once" {
		t.Errorf("the keys page shows the member's new key's limits as %q (%v)", got, err)
	}

	b.do("log out", chromedp.Click(chromedp.CSS("form.logout button")), chromedp.WaitVisible(chromedp.ID("username")))
	b.login("admin", consolePasswords["admin"], "form.logout")
	shows("the operator", map[string][]string{
		"/":              {account},
		"/accounts":      {account},
		accountPage:      {account, "<img id=xss-note src=x> top-up"},
		"/tasks":         {task, account},
		"/tasks/" + task: {account, "<img id=xss-error src=x> the upstream's own words"},
		"/keys":          {account, "budget 25.5 a UTC month"},
	})
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}
