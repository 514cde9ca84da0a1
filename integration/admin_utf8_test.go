package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The admin API reads the text of its JSON bodies as UTF-8, as the gateway's own JSON endpoints
// do, and as storage.CheckAccountName and the credit's note rule require: an account name or a
// note holding a byte that is not UTF-8, or an escaped lone surrogate, is refused with 400 and
// changes nothing. encoding/json would read each as U+FFFD, so "acme\xff" and "acme\xfe" would
// both name the account "acme\uFFFD" (two tenants of a sign-up script's in one account), and a
// note would be kept as another text than the operator sent.
func TestAdminAPIRefusesTextThatIsNotUTF8(t *testing.T) {
	e := startKeysGateway(t)
	for _, body := range []string{"{\"account\":\"acme\xff\"}", `{"account":"acme\ud800"}`} {
		if r := e.admin(t, http.MethodPost, "/mediagw/keys", body); r.status != http.StatusBadRequest {
			t.Errorf("POST /mediagw/keys %q = %d %s, want 400", body, r.status, r.body)
		}
	}
	if r := e.admin(t, http.MethodGet, "/mediagw/keys?account="+url.QueryEscape("acme\uFFFD"), nil); r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != "[]" {
		t.Errorf("keys of acme\\uFFFD = %d %s, want none", r.status, r.body)
	}
	id, _ := e.newKey(t, `{"account":"acme"}`)
	if r := e.admin(t, http.MethodPatch, "/mediagw/keys/"+id, "{\"account\":\"beta\xfe\"}"); r.status != http.StatusBadRequest {
		t.Errorf("PATCH the key's account to beta\\xfe = %d %s, want 400", r.status, r.body)
	}
	for i, note := range []string{"{\"amount\":\"5\",\"note\":\"paid \xff\"}", `{"amount":"5","note":"paid \udc00"}`} {
		r := e.adminMoney(t, http.MethodPost, "/mediagw/accounts/acme/credit", note,
			map[string]string{"Idempotency-Key": "utf8-" + string(rune('a'+i)), "Content-Type": "application/json"})
		if r.status != http.StatusBadRequest {
			t.Errorf("credit with note %q = %d %s, want 400 (a note that is not UTF-8 is refused)", note, r.status, r.body)
		}
	}
	if r := e.admin(t, http.MethodGet, "/mediagw/accounts/acme/balance", nil); r.status != http.StatusOK || r.field("balance") != "0" {
		t.Errorf("acme's balance after the refused credits = %d %s, want 0", r.status, r.body)
	}
}
