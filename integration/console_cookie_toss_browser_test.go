package integration

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediagw/mediagw/internal/testbrowser"
)

// tossCaddyfile serves the console also as console.mediagw.localhost, and a hostile page on a
// sibling host, evil.mediagw.localhost (a browser resolves every *.localhost name to loopback
// and treats it as a secure context, as it would a sibling subdomain under HTTPS).
var tossCaddyfile = strings.Replace(consoleCaddyfile,
	"http://127.0.0.1:{{console_port}} {",
	`http://evil.mediagw.localhost:{{console_port}} {
	header Content-Type "text/html; charset=utf-8"
	respond "<!doctype html><title>a sibling site</title><p>hello</p>" 200
}

http://127.0.0.1:{{console_port}}, http://console.mediagw.localhost:{{console_port}} {`, 1)

// In a real browser, a page on a sibling subdomain cannot put the browser in the attacker's
// console session by writing the attacker's session cookie for the parent domain (cookie
// tossing: the login CSRF that the login form's token guards against, by another way in).
func TestConsoleSessionCookieCannotBeTossedBySiblingHost(t *testing.T) {
	if !strings.Contains(tossCaddyfile, "evil.mediagw.localhost") {
		t.Fatal("the console's Caddyfile changed: tossCaddyfile no longer adds the sibling site")
	}
	e := startConsoleWith(t, tossCaddyfile)
	port := strings.TrimPrefix(e.console, "http://127.0.0.1:")
	// The attacker is alice, a member of acme; her session cookie is what she tosses.
	attacker := e.login(t, "alice")
	name, value, ok := strings.Cut(attacker.cookie, "=")
	if !ok || value == "" {
		t.Fatalf("alice's session cookie = %q", attacker.cookie)
	}
	if status, _, _ := attacker.do(http.MethodGet, "/accounts/acme", nil); status != http.StatusOK {
		t.Fatalf("alice's own session does not open her account: %d", status)
	}

	b := browserTab{t: t, ctx: testbrowser.New(t, 1280, 900, time.Minute), console: "http://console.mediagw.localhost:" + port}
	b.do("the sibling site", chromedp.Navigate("http://evil.mediagw.localhost:"+port+"/"), chromedp.WaitVisible(chromedp.CSS("p")))
	for _, c := range []string{
		"toss_probe=1; domain=mediagw.localhost; path=/; secure",
		name + "=" + value + "; domain=mediagw.localhost; path=/; secure",
		name + "=" + value + "; domain=mediagw.localhost; path=/accounts; secure",
	} {
		b.eval(`(document.cookie = ` + strconv.Quote(c) + `, true)`)
	}

	b.do("the console", chromedp.Navigate(b.console+"/"), chromedp.WaitVisible(chromedp.CSS("h1")))
	// The probe shows that this browser does let the sibling write cookies for the parent
	// domain, so what follows is the session cookie's own defence.
	if !b.eval(`document.cookie.includes("toss_probe=1")`) {
		t.Fatal("the browser refused the sibling's probe cookie: the test proves nothing")
	}
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(loc, "/login") || b.eval(`document.body.innerText.includes("acme")`) {
		t.Fatalf("the tossed cookie %s is a session: the console opened %s", name, loc)
	}
	b.do("acme's page", chromedp.Navigate(b.console+"/accounts/acme"), chromedp.WaitVisible(chromedp.CSS("h1")))
	if !b.eval(`!!document.getElementById("password")`) {
		t.Fatal("the tossed cookie with path /accounts opens acme's page")
	}
}
