package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/internal/testbrowser"
)

// rowAction is a browser expression: the text of the actions cell of the keys table's row of a
// key, "missing" when no row names it.
func rowAction(id string) string {
	return `(() => { const tr = [...document.querySelectorAll('table tbody tr')].find(tr => tr.cells[0].innerText === ` + jsString(id) +
		`); return tr ? tr.cells[6].innerText + (tr.cells[6].querySelector('form button') ? ' [button]' : '') : 'missing' })()`
}

// In a real browser, a member logged in with a key restricted to sim-video sees a Revoke button
// only on the keys the server lets them revoke (the keys page and the account page alike): a key
// of sim-video has one, and it works; a key that may use every model or another model says it is
// not theirs to revoke, and a configured key says configured. Before, every stored key showed
// Revoke, and the server answered 403 to the wider keys' buttons.
func TestConsoleRevokeButtonsMatchTheServerInABrowser(t *testing.T) {
	e := startConsoleWith(t, keyModelsConsoleCaddyfile)
	mk := func(spec string) string {
		r := call(t, http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", "", spec)
		if r.status != http.StatusCreated || r.field("id") == "" {
			t.Fatalf("admin key %s = %d %s", spec, r.status, r.body)
		}
		return r.field("id")
	}
	wide, secret, video := mk(`{"account":"acme"}`), mk(`{"account":"acme","models":["sim-secret"]}`), mk(`{"account":"acme","models":["sim-video"]}`)

	b := browserTab{t: t, ctx: testbrowser.New(t, 1280, 900, 2*time.Minute), console: e.console}
	b.do("key login", chromedp.Navigate(e.console+"/login"), chromedp.WaitVisible(chromedp.ID("api_key")),
		chromedp.Focus(chromedp.ID("api_key")), chromedp.KeyEvent("mg-console-acme-v"), chromedp.KeyEvent("\r"))
	b.waitPath("/accounts/acme")
	b.do("the account page", chromedp.WaitVisible(chromedp.CSS("table tbody")))
	want := map[string]string{
		wide:             "uses models beyond your key's: not yours to revoke",
		secret:           "uses models beyond your key's: not yours to revoke",
		video:            "Revoke [button]",
		"acme-video-key": "configured",
	}
	for _, page := range []string{"/keys", "/accounts/acme"} {
		b.do(page, chromedp.Navigate(e.console+page), chromedp.WaitVisible(chromedp.CSS("table tbody")))
		for id, action := range want {
			got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](rowAction(id)))
			if err != nil || got != action {
				t.Errorf("%s: the row of key %s shows %q (%v), want %q", page, id, got, err, action)
			}
		}
	}
	b.shot("keys-restricted-member")

	// The button that is shown works.
	b.do("revoke the sim-video key", chromedp.Navigate(e.console+"/keys"), chromedp.WaitVisible(chromedp.CSS("table tbody")),
		chromedp.Click(chromedp.CSS(`button[aria-label="Revoke key `+video+`"]`)))
	waitFor(t, "the sim-video key revoked", func() bool {
		return call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/keys/"+video, "", nil).status == http.StatusNotFound
	})
	for _, id := range []string{wide, secret} {
		if r := call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/keys/"+id, "", nil); r.status != http.StatusOK {
			t.Errorf("key %s after the member's visit = %d", id, r.status)
		}
	}

	// A password member of the account sees Revoke on every stored key.
	b.do("log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.ID("username")))
	b.login("alice", consolePasswords["alice"], `nav[aria-label="Main"]`)
	b.do("alice's keys", chromedp.Navigate(e.console+"/keys"), chromedp.WaitVisible(chromedp.CSS("table tbody")))
	for _, id := range []string{wide, secret} {
		if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](rowAction(id))); err != nil || got != "Revoke [button]" {
			t.Errorf("alice's row of key %s shows %q (%v)", id, got, err)
		}
	}
}

// In a real browser, a member logged in with a key restricted to sim-video sees on the account
// page the figures of sim-video only: the requests, tasks and spend cards are that model's over
// the charts' 14 days (the admin usage report's sim-video row), the daily charts have no
// sim-secret series, and the page says what the figures cover (the balance stays the account's).
// The usage CSV counts sim-video only too. A password member of the account sees every model.
// Before, the restricted member saw the account's totals and sim-secret's charts.
func TestConsoleFiguresOfTheKeysModelsInABrowser(t *testing.T) {
	e := startConsoleWith(t, keyModelsConsoleCaddyfile)
	for _, tc := range []struct{ key, model string }{
		{"mg-console-acme", "sim-secret"}, {"mg-console-acme", "sim-secret"}, {"mg-console-acme-v", "sim-video"},
	} {
		id := e.createTask(t, tc.key, `{"model":"`+tc.model+`","content":[{"type":"text","text":"a harbour"}],"duration":5}`)
		waitTaskStatus(t, e.base, tc.key, id, "succeeded")
	}
	alice := e.login(t, "alice")
	waitFor(t, "three settlements on alice's account page", func() bool {
		_, _, page := alice.do(http.MethodGet, "/accounts/acme", nil)
		return strings.Count(page, "<td>settle</td>") == 3
	})
	// What the admin usage report counts for each model.
	var report struct {
		Rows []struct {
			Model           string
			Requests, Tasks int64
			Amount          string
		}
	}
	// A task's finish writes its usage record (which the report counts) just after its
	// settlement: the report is read until it counts the three tasks and what the ledger charged.
	var charged int64
	for _, en := range ledgerEntries(t, e.g, "acme") {
		if en["kind"] == "settle" {
			n, _ := money.Parse(fmt.Sprint(en["charged"]))
			charged += n
		}
	}
	waitFor(t, "the usage report to count the three tasks and their charges", func() bool {
		report.Rows = nil
		decodeJSON(t, call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/usage?account=acme&group_by=model", "", nil).body, &report)
		var tasks, amount int64
		for _, r := range report.Rows {
			n, _ := money.Parse(r.Amount)
			tasks, amount = tasks+r.Tasks, amount+n
		}
		return tasks == 3 && amount == charged
	})
	var video, secret string
	for _, r := range report.Rows {
		figures := fmt.Sprintf("%d requests in 14 days|%d tasks in 14 days|%s spent in 14 days", r.Requests, r.Tasks, r.Amount)
		switch r.Model {
		case "sim-video":
			video = figures
		case "sim-secret":
			secret = figures
		}
	}
	if video == "" || secret == "" || video == secret {
		t.Fatalf("the usage report has no distinct rows for both models: %+v", report.Rows)
	}

	b := browserTab{t: t, ctx: testbrowser.New(t, 1280, 900, 2*time.Minute), console: e.console}
	b.do("key login", chromedp.Navigate(e.console+"/login"), chromedp.WaitVisible(chromedp.ID("api_key")),
		chromedp.Focus(chromedp.ID("api_key")), chromedp.KeyEvent("mg-console-acme-v"), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("table.ledger")))
	b.waitPath("/accounts/acme")
	const cards = `[...document.querySelectorAll('section.cards')][0].querySelectorAll('.card')`
	const seriesNames = `[...document.querySelectorAll('figure.chart thead th')].map(th => th.textContent).join('|')`
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[...`+cards+`].slice(0, 3).map(c => c.textContent.replace(/\s+/g, ' ').trim()).join('|')`))
	if err != nil || got != video {
		t.Errorf("the restricted member's cards read %q (%v), want sim-video's %q", got, err, video)
	}
	if names, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](seriesNames)); err != nil || strings.Contains(names, "sim-secret") || !strings.Contains(names, "sim-video") {
		t.Errorf("the restricted member's daily charts have the series %q (%v)", names, err)
	}
	if !b.eval(`(s => !!s && s.innerText.includes('only the models of the key you logged in with (sim-video), over the last 14 days') && s.innerText.includes('The balance'))(document.getElementById('figures-scope'))`) {
		t.Error("the restricted member's account page does not say what its figures cover")
	}
	b.shot("account-restricted-member")

	m := e.keyLogin(t, "mg-console-acme-v")
	if status, _, file := m.do(http.MethodGet, "/usage.csv?group_by=model", nil); status != http.StatusOK || strings.Contains(file, "sim-secret") || !strings.Contains(file, "sim-video") {
		t.Errorf("the restricted member's usage CSV = %d:\n%s", status, file)
	}
	if status, _, file := m.do(http.MethodGet, "/usage.csv?group_by=account", nil); status != http.StatusOK || !strings.Contains(file, "acme,"+strings.Split(video, " ")[0]+",") {
		t.Errorf("the restricted member's usage CSV by account does not count sim-video's requests only (%s):\n%s", video, file)
	}

	// A password member of the account sees every model, and no restriction note.
	b.do("log out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)), chromedp.WaitVisible(chromedp.ID("username")))
	b.login("alice", consolePasswords["alice"], `nav[aria-label="Main"]`)
	b.do("alice's account page", chromedp.Navigate(e.console+"/accounts/acme"), chromedp.WaitVisible(chromedp.CSS("table.ledger")))
	if names, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](seriesNames)); err != nil || !strings.Contains(names, "sim-secret") || !strings.Contains(names, "sim-video") {
		t.Errorf("alice's daily charts have the series %q (%v)", names, err)
	}
	if b.eval(`!!document.getElementById('figures-scope')`) {
		t.Error("alice's account page says its figures are restricted")
	}
	if _, _, file := alice.do(http.MethodGet, "/usage.csv?group_by=model", nil); !strings.Contains(file, "sim-secret") {
		t.Errorf("alice's usage CSV has no sim-secret row:\n%s", file)
	}
}
