package integration

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
