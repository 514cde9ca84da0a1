package integration

import (
	"net/http"
	"strings"
	"testing"
)

// An account name prints as itself, so that no tenant's account passes for another's
// (docs/security.md, "Account names"): "équipe" written with U+00E9 and written with "e" and the
// combining acute accent U+0301 are the same text to Unicode (canonically equivalent) and to a
// reader, on every page, export and log. The second spelling is refused with 400, or names the
// account the first made; it never makes a second account that reads exactly like the first.
func TestAccountNamesThatReadAlikeAreOneAccount(t *testing.T) {
	e := startKeysGateway(t)
	composed, decomposed := "\u00e9quipe", "e\u0301quipe"
	e.newKey(t, `{"account":"`+composed+`"}`)
	r := e.admin(t, http.MethodPost, "/mediagw/keys", `{"account":"`+decomposed+`"}`)
	if r.status == http.StatusBadRequest {
		return
	}
	if r.status != http.StatusCreated {
		t.Fatalf("create a key for %q = %d %s", decomposed, r.status, r.body)
	}
	if got := r.field("account"); got != composed {
		list := e.admin(t, http.MethodGet, "/mediagw/accounts", nil)
		t.Errorf("a key for e+U+0301 \"quipe\" made account %q beside %q: two accounts that read alike (%s)",
			got, composed, strings.TrimSpace(string(list.body)))
	}
	// The same through the console's account path: disabling the decomposed spelling must not
	// make a record of a second account.
	if r := e.admin(t, http.MethodPatch, "/mediagw/accounts/e%CC%81quipe2", `{"disabled":true}`); r.status == http.StatusOK {
		if r2 := e.admin(t, http.MethodPatch, "/mediagw/accounts/%C3%A9quipe2", `{"disabled":false}`); r2.status == http.StatusOK {
			if r3 := e.admin(t, http.MethodGet, "/mediagw/accounts/e%CC%81quipe2", nil); r3.status == http.StatusOK && strings.Contains(string(r3.body), `"disabled":true`) {
				t.Errorf("enabling équipe2 (U+00E9) left équipe2 (e+U+0301) disabled: two records of names that read alike")
			}
		}
	}
}

// A Caddyfile key's account named before the NFC rule (e and U+0301) still loads and works: the
// rule refuses only a new account's name in the admin API; the Caddyfile's is logged as a
// warning. Its account can be disabled through the admin API, as any account with a key.
func TestCaddyfileKeyOfANonNFCAccountLoads(t *testing.T) {
	caddyfile := strings.Replace(keysCaddyfile, "account acme\n", "account acme\n\t\t}\n\t\tkey mg-static-nfc-test {\n\t\t\tid nfc-key\n\t\t\taccount e\u0301quipe\n", 1)
	base, g := startSimGateway(t, caddyfile, nil)
	if r := call(t, http.MethodGet, base+"/v1/models", "mg-static-nfc-test", nil); r.status != http.StatusOK {
		t.Fatalf("the key of account e+U+0301 quipe = %d %s", r.status, r.body)
	}
	e := keysEnv{g: g, base: base}
	if r := e.admin(t, http.MethodPatch, "/mediagw/accounts/e%CC%81quipe", `{"disabled":true}`); r.status != http.StatusOK {
		t.Fatalf("disabling the account = %d %s", r.status, r.body)
	}
}
