package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The console's change forms are read as strictly as the admin API reads the same change, and
// as the usage export reads its query: a field given twice (which value counts: the browser's,
// a proxy's, an extension's?) or a value that is not UTF-8 is refused with an error page and
// changes nothing, never read as its first copy or as a changed text.
func TestConsoleChangeFormsRefuseRepeatedAndMisencodedFields(t *testing.T) {
	e := startConsole(t)
	admin := e.login(t, "admin")

	// A credit form with two amounts credits nothing.
	form := url.Values{"amount": {"1", "1000"}, "note": {"top-up"}, "idempotency_key": {admin.creditForm("acme")}}
	if status, _, _ := admin.post("/accounts/acme/credit", form); status != http.StatusBadRequest {
		t.Errorf("credit with amount=1&amount=1000 = %d, want 400", status)
	}
	// Nor does one with two idempotency keys, or two notes.
	form = url.Values{"amount": {"2"}, "idempotency_key": {admin.creditForm("acme"), "console-other"}}
	if status, _, _ := admin.post("/accounts/acme/credit", form); status != http.StatusBadRequest {
		t.Errorf("credit with two idempotency keys = %d, want 400", status)
	}
	if got := e.adminBalance(t, "acme"); got != "0" {
		t.Errorf("acme's balance after the refused credit forms = %s, want 0 (never credited)", got)
	}

	keysOf := func(account string) int { t.Helper(); return e.madeKeys(t, account) }
	// A key form naming two accounts creates no key in either.
	if status, _, page := admin.post("/keys", url.Values{"account": {"acme", "beta"}}); status != http.StatusBadRequest || strings.Contains(page, `id="secret"`) {
		t.Errorf("create a key with account=acme&account=beta = %d, want 400 and no secret", status)
	}
	if n := keysOf("acme") + keysOf("beta"); n != 0 {
		t.Errorf("a key form naming two accounts made %d keys", n)
	}
	// An account name or a model that is not UTF-8 is refused, not stored as another text
	// (U+FFFD for the bad byte), as storage.CheckAccountName refuses a name that is not UTF-8.
	for _, f := range []url.Values{{"account": {"acme\xff"}}, {"account": {"acme"}, "models": {"sim-video\xff"}}} {
		if status, _, page := admin.post("/keys", f); status != http.StatusBadRequest || strings.Contains(page, `id="secret"`) {
			t.Errorf("create a key with %q = %d, want 400 and no secret", f.Encode(), status)
		}
	}
	if n := keysOf("acme\uFFFD") + keysOf("acme"); n != 0 {
		t.Errorf("key forms with bytes that are not UTF-8 made %d keys", n)
	}
	// The list pages read their queries as strictly: a query that does not decode, a repeated
	// parameter or a status no task has is an error page, not every key or an empty list.
	for _, path := range []string{"/keys?account=%zz", "/keys?account=acme&account=beta", "/tasks?status=bogus", "/tasks?model=a&model=b", "/accounts?after=%FF"} {
		if status, _, page := admin.do(http.MethodGet, path, nil); status != http.StatusBadRequest || strings.Contains(page, "acme-key") {
			t.Errorf("GET %s = %d, want 400 and no list", path, status)
		}
	}
}
