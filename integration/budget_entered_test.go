package integration

import (
	"net/http"
	"strings"
	"testing"
)

// TestKeyBudgetIsAnEnteredAmount: a key's budget is an amount an operator enters, read as a
// credit's amount is (money.ParseEntered): "+5" is refused, with 400 on the admin API and as a
// config error on a reload, and changes nothing. Before, the budget took the price parser, which
// reads "+5" as 5: the key was made with a budget the operator did not type.
func TestKeyBudgetIsAnEnteredAmount(t *testing.T) {
	e := startKeysGateway(t)
	id, _ := e.newKey(t, `{"account":"acme","budget":{"amount":"5","period":"day"}}`)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/mediagw/keys", `{"account":"acme","budget":{"amount":"+5"}}`},
		{"POST", "/mediagw/keys", `{"account":"acme","budget":{"amount":"+5","period":"month"}}`},
		{"PATCH", "/mediagw/keys/" + id, `{"budget":{"amount":"+7"}}`},
	} {
		if r := e.admin(t, tc.method, tc.path, tc.body); r.status != http.StatusBadRequest || !strings.Contains(r.field("error"), "budget") {
			t.Errorf("%s %s %s = %d %s; want 400 about the budget", tc.method, tc.path, tc.body, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/keys/"+id, nil); !strings.Contains(string(r.body), `"budget":{"amount":"5","period":"day"}`) {
		t.Errorf("the key after a refused patch: %s; want its budget of 5 a day unchanged", r.body)
	}
	if r := e.admin(t, "GET", "/mediagw/keys?account=acme", nil); strings.Count(string(r.body), `"account":"acme"`) != 2 {
		t.Errorf("keys of acme after the refused creates: %s; want the static key and the one made", r.body)
	}
	// The Caddyfile's budget, a reload's too.
	cfg := strings.Replace(keysCaddyfile, "\t\t\taccount acme\n", "\t\t\taccount acme\n\t\t\tbudget +5 day\n", 1)
	if err := e.g.reload(cfg); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a reload with `budget +5 day`: %v; want it refused", err)
	}
	if err := e.g.reload(strings.Replace(cfg, "budget +5 day", "budget 5 day", 1)); err != nil {
		t.Errorf("a reload with `budget 5 day`: %v", err)
	}
}
