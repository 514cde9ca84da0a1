package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// creditKeyField is the credit form's idempotency key, made anew by each render of the page.
var creditKeyField = regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`)

// creditForm reads the account page for a fresh credit form and returns its idempotency key.
func (b *consoleBrowser) creditForm(account string) string {
	b.t.Helper()
	status, _, page := b.do(http.MethodGet, "/accounts/"+account, nil)
	m := creditKeyField.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil {
		b.t.Fatalf("account page of %s = %d, credit form shown: %v", account, status, m != nil)
	}
	return m[1]
}

// adminBalance is the account's balance as the admin API shows it.
func (e consoleEnv) adminBalance(t *testing.T, account string) string {
	t.Helper()
	r := call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/accounts/"+account+"/balance", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("balance of %s = %d %s", account, r.status, r.body)
	}
	return r.field("balance")
}

// An operator credits an account through the account page's form: the balance and the ledger
// entry are shown, a form posted twice credits once, and a negative amount needs the
// adjustment box.
func TestConsoleOperatorCreditsOnce(t *testing.T) {
	e := startConsole(t)
	admin := e.login(t, "admin")
	if _, _, page := admin.do(http.MethodGet, "/accounts/acme", nil); !strings.Contains(page, `<span class="figure">unlimited</span>`) {
		t.Fatal("the account page of an account never credited does not say unlimited")
	}
	key := admin.creditForm("acme")
	if again := admin.creditForm("acme"); again == key {
		t.Fatal("two renders of the credit form carry the same idempotency key")
	}
	form := url.Values{"amount": {"12.5"}, "note": {"first top-up"}, "idempotency_key": {key}}
	for i := range 2 { // a double submit
		if status, h, page := admin.post("/accounts/acme/credit", form); status != http.StatusSeeOther || h.Get("Location") != "/accounts/acme" {
			t.Fatalf("credit %d = %d %s", i+1, status, page)
		}
	}
	if got := e.adminBalance(t, "acme"); got != "12.5" {
		t.Fatalf("balance after the form posted twice = %s, want 12.5", got)
	}
	// The same form sent back with another amount credits nothing.
	form.Set("amount", "99")
	if status, _, page := admin.post("/accounts/acme/credit", form); status != http.StatusConflict || !strings.Contains(page, "Reload the account page") {
		t.Fatalf("the used form with another amount = %d %s", status, page)
	}
	if got := e.adminBalance(t, "acme"); got != "12.5" {
		t.Fatalf("balance after the used form was sent with another amount = %s, want 12.5", got)
	}
	_, _, page := admin.do(http.MethodGet, "/accounts/acme", nil)
	if !strings.Contains(page, `<span class="figure">12.5</span> balance`) || strings.Count(page, "first top-up") != 1 ||
		!regexp.MustCompile(`<td>credit</td><td>12.5</td><td>12.5</td>`).MatchString(page) {
		t.Fatalf("account page after the credit does not show the balance and one ledger entry:\n%s", page)
	}

	// A negative amount without the adjustment box is refused and changes nothing.
	status, _, page := admin.post("/accounts/acme/credit", url.Values{"amount": {"-2"}, "idempotency_key": {admin.creditForm("acme")}})
	if status != http.StatusBadRequest || !strings.Contains(page, "Adjustment") {
		t.Fatalf("negative credit without adjustment = %d %s", status, page)
	}
	for _, bad := range []string{"12.1234567", "twelve", ""} {
		status, _, page := admin.post("/accounts/acme/credit", url.Values{"amount": {bad}, "idempotency_key": {admin.creditForm("acme")}})
		if status != http.StatusBadRequest || !strings.Contains(page, "at most 6 decimals") {
			t.Fatalf("credit of %q = %d %s", bad, status, page)
		}
	}
	if status, _, _ := admin.post("/accounts/acme/credit", url.Values{"amount": {"1"}}); status != http.StatusBadRequest {
		t.Fatalf("credit without the form's key = %d", status)
	}
	if got := e.adminBalance(t, "acme"); got != "12.5" {
		t.Fatalf("balance after refused credits = %s", got)
	}
	status, _, _ = admin.post("/accounts/acme/credit", url.Values{"amount": {"-2"}, "adjust": {"on"}, "note": {"refund of a mistake"}, "idempotency_key": {admin.creditForm("acme")}})
	if status != http.StatusSeeOther {
		t.Fatalf("negative credit with adjustment = %d", status)
	}
	if got := e.adminBalance(t, "acme"); got != "10.5" {
		t.Fatalf("balance after the adjustment = %s, want 10.5", got)
	}
	if status, _, _ := admin.post("/accounts/nobody/credit", url.Values{"amount": {"1"}, "idempotency_key": {"k"}}); status != http.StatusNotFound {
		t.Fatalf("credit of an unknown account = %d", status)
	}
}

// A member sees their account's balance and ledger but has no credit form, cannot credit (404
// as for every operator-only form), and cannot see another account's ledger.
func TestConsoleMemberSeesOwnLedgerOnly(t *testing.T) {
	e := startConsole(t)
	for account, note := range map[string]string{"acme": "acme's top-up", "beta": "beta's top-up"} {
		req, err := http.NewRequest(http.MethodPost, "http://"+e.g.admin+"/mediagw/accounts/"+account+"/credit", strings.NewReader(`{"amount":"3","note":"`+note+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", "setup-"+account)
		r := do(t, req)
		if r.status != http.StatusOK {
			t.Fatalf("credit of %s = %d %s", account, r.status, r.body)
		}
	}
	alice := e.login(t, "alice")
	status, _, page := alice.do(http.MethodGet, "/accounts/acme", nil)
	if status != http.StatusOK || !strings.Contains(page, `<span class="figure">3</span> balance`) || !strings.Contains(page, "acme&#39;s top-up") {
		t.Fatalf("alice's account page = %d:\n%s", status, page)
	}
	if strings.Contains(page, "/credit") || strings.Contains(page, "idempotency_key") {
		t.Fatal("alice's account page has a credit form")
	}
	for _, account := range []string{"acme", "beta"} {
		if status, _, _ := alice.post("/accounts/"+account+"/credit", url.Values{"amount": {"100"}, "idempotency_key": {"alice-" + account}}); status != http.StatusNotFound {
			t.Fatalf("credit of %s as alice = %d", account, status)
		}
		if got := e.adminBalance(t, account); got != "3" {
			t.Fatalf("balance of %s after alice's credit = %s", account, got)
		}
	}
	for _, path := range []string{"/accounts/beta", "/accounts/beta?before=0", "/accounts/beta?before=2"} {
		if status, _, page := alice.do(http.MethodGet, path, nil); status != http.StatusNotFound || strings.Contains(page, "beta&#39;s top-up") {
			t.Fatalf("GET %s as alice = %d", path, status)
		}
	}
}

// The account page shows one page of the ledger, newest first, and links the older entries
// through the ledger's cursor and, from an older page, the newer ones: 120 entries page as
// 120-71, 70-21 and 20-1 going back, and as 20-1, 70-21 and 120-71 coming forward again. Before
// the fix an older page linked only the newest one, so a reader could not step back a page.
func TestConsoleLedgerPages(t *testing.T) {
	e := startConsole(t)
	const entries = 120
	for i := range entries {
		req, err := http.NewRequest(http.MethodPost, "http://"+e.g.admin+"/mediagw/accounts/acme/credit", strings.NewReader(fmt.Sprintf(`{"amount":"1","note":"top-up %d"}`, i+1)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", fmt.Sprint("page-", i))
		if r := do(t, req); r.status != http.StatusOK {
			t.Fatalf("credit %d = %d %s", i+1, r.status, r.body)
		}
	}
	alice := e.login(t, "alice")
	// link is the page's link named text ("Older entries", "Newer entries").
	link := func(page, text string) string {
		m := regexp.MustCompile(`href="(/accounts/acme\?before=[0-9]+)"[^>]*>` + text + `<`).FindStringSubmatch(page)
		if m == nil {
			return ""
		}
		return strings.ReplaceAll(m[1], "&amp;", "&")
	}
	// notes are the page's top-up numbers, in the page's order.
	notes := func(page string) string {
		var n []string
		for _, m := range regexp.MustCompile(`<td>top-up ([0-9]+)</td>`).FindAllStringSubmatch(page, -1) {
			n = append(n, m[1])
		}
		if len(n) == 0 {
			return ""
		}
		return n[0] + "-" + n[len(n)-1] + fmt.Sprintf(" (%d)", len(n))
	}
	_, _, page := alice.do(http.MethodGet, "/accounts/acme", nil)
	if got := notes(page); got != "120-71 (50)" || link(page, "Newer entries") != "" || strings.Contains(page, "Newest entries") {
		t.Fatalf("the newest ledger page is %s, newer link %q", got, link(page, "Newer entries"))
	}
	var back []string
	for _, want := range []string{"70-21 (50)", "20-1 (20)"} {
		older := link(page, "Older entries")
		if older == "" {
			t.Fatalf("the page before %s has no link to older entries", want)
		}
		back = append(back, older)
		_, _, page = alice.do(http.MethodGet, older, nil)
		if got := notes(page); got != want || !strings.Contains(page, "Newest entries") {
			t.Fatalf("GET %s shows %s, want %s", older, got, want)
		}
	}
	if link(page, "Older entries") != "" {
		t.Fatal("the oldest ledger page links older entries")
	}
	for _, want := range []string{"70-21 (50)", "120-71 (50)"} {
		newer := link(page, "Newer entries")
		if newer == "" {
			t.Fatalf("the page after %s has no link to newer entries:\n%s", want, page)
		}
		_, _, page = alice.do(http.MethodGet, newer, nil)
		if got := notes(page); got != want {
			t.Fatalf("GET %s (newer) shows %s, want %s", newer, got, want)
		}
	}
	// A page of fewer than 50 newer entries links the newest page: ?before=30 shows 29-1, and its
	// newer page is 79-30.
	_, _, page = alice.do(http.MethodGet, "/accounts/acme?before=30", nil)
	if newer := link(page, "Newer entries"); newer != "/accounts/acme?before=80" {
		t.Fatalf("the newer link of ?before=30 is %q", newer)
	}
	_, _, page = alice.do(http.MethodGet, "/accounts/acme?before=110", nil)
	if newer := link(page, "Newer entries"); newer != "" || !strings.Contains(page, "Newest entries") {
		t.Fatalf("the page before 110, with 11 newer entries, links %q rather than the newest page", newer)
	}

	// The page links the whole ledger as CSV, which the member downloads: the admin API's own CSV,
	// byte for byte. Another account's is 404.
	if !strings.Contains(page, `href="/accounts/acme/ledger.csv"`) {
		t.Fatal("the account page does not link its ledger's CSV")
	}
	status, h, csvFile := alice.do(http.MethodGet, "/accounts/acme/ledger.csv", nil)
	admin := call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/accounts/acme/ledger?format=csv&limit=1000", "", nil)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") || csvFile != string(admin.body) ||
		strings.Count(csvFile, "\n") != entries+1 || !strings.Contains(csvFile, ",credit,1,120,,top-up 120\n") {
		t.Fatalf("alice's ledger CSV = %d %v, the admin API's = %d:\n%s\n--\n%s", status, h, admin.status, csvFile, admin.body)
	}
	if status, _, page := alice.do(http.MethodGet, "/accounts/beta/ledger.csv", nil); status != http.StatusNotFound || strings.Contains(page, "top-up") {
		t.Fatalf("beta's ledger CSV as alice = %d", status)
	}
}

// pricedConsoleCaddyfile is the console's Caddyfile with sim-video priced per second.
var pricedConsoleCaddyfile = strings.Replace(consoleCaddyfile, "\t\tkey mg-console-acme {",
	"\t\tprice sim-video {\n\t\t\tsecond 0.35\n\t\t}\n\t\tkey mg-console-acme {", 1)

// taskCostFact is the cost the task page states among the task's facts.
var taskCostFact = regexp.MustCompile(`(?i)<dt>[^<]*cost[^<]*</dt><dd>([^<]*)</dd>`)

// A task's page states what the task cost as the ledger charged it, to the operator and to the
// account's member: a task of 5 s at 0.35 a second is charged 1.75, not 0.
func TestConsoleTaskPageStatesWhatTheTaskCost(t *testing.T) {
	if !strings.Contains(pricedConsoleCaddyfile, "second 0.35") {
		t.Fatal("the console's Caddyfile changed: no price was added")
	}
	e := startConsoleWith(t, pricedConsoleCaddyfile)
	id := e.createTask(t, "mg-console-acme", `{"model":"sim-video","content":[{"type":"text","text":"a priced lighthouse"}],"duration":5}`)
	waitTaskStatus(t, e.base, "mg-console-acme", id, "succeeded")
	admin, alice := e.login(t, "admin"), e.login(t, "alice")
	for name, b := range map[string]*consoleBrowser{"admin": admin, "alice": alice} {
		var page string
		waitFor(t, "the settled task's page", func() bool {
			var status int
			status, _, page = b.do(http.MethodGet, "/tasks/"+id, nil)
			return status == http.StatusOK && strings.Contains(page, "settled: charged 1.75")
		})
		m := taskCostFact.FindStringSubmatch(page)
		if m == nil || !strings.Contains(m[1], "1.75") {
			t.Errorf("%s's page of a task charged 1.75 states its cost as %q", name, m)
		}
		// acme was never credited: unlimited, metered, and its page says what it spent.
		_, _, page = b.do(http.MethodGet, "/accounts/acme", nil)
		if !strings.Contains(page, "balance (spent 1.75)") {
			t.Errorf("%s's page of unlimited acme, which spent 1.75, does not say so:\n%s", name, page)
		}
	}
}
