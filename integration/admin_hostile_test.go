package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestAccountNamesPrintAsThemselves: an account name is shown to operators as text (the console,
// the CSV exports, the CLI, logs). A name that prints like another one ("acme " or "acme" with a
// zero-width space is "acme" on every page) or whose letters are shown in another order than
// they are stored (a right-to-left override makes "gam\u202Eemca" read "gamacme") lets a tenant
// whose sign-up names its account pass for another tenant, and an operator credit or disable the
// wrong one. Such names are refused with 400 naming the account; nothing is made.
func TestAccountNamesPrintAsThemselves(t *testing.T) {
	e := startKeysGateway(t)
	for _, name := range []string{" acme", "acme ", "acme\u00a0", "ac\u200bme", "\ufeffacme", "gam\u202eemca", "a\u2066b\u2069", "ac\u00adme", "a\u2028b", "a\u2029b"} {
		body := string(must(json.Marshal(map[string]string{"account": name})))
		if r := e.admin(t, "POST", "/mediagw/keys", body); r.status != http.StatusBadRequest || !strings.Contains(r.field("error"), "account") {
			t.Errorf("a key of account %q = %d %s; want 400 naming the account", name, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts", nil); strings.Contains(string(r.body), `\u`) || strings.Count(string(r.body), `"name"`) != 1 {
		t.Fatalf("accounts after the refused keys = %s; want acme alone", r.body)
	}
	// Names in other scripts, with inner spaces and with marks are text like any other.
	for _, name := range []string{"café", "東京 team", "ﺍﻟﻌﺮﺑﻴﺔ", "a b"} {
		body := string(must(json.Marshal(map[string]string{"account": name})))
		if r := e.admin(t, "POST", "/mediagw/keys", body); r.status != http.StatusCreated {
			t.Errorf("a key of account %q = %d %s", name, r.status, r.body)
		}
	}
}

// TestCreditIdempotencyKeyIsOneHeader: a credit's Idempotency-Key follows the rule of every other
// Idempotency-Key of the gateway: one header of 1 to 255 printable ASCII characters. Two headers
// (a proxy or a client that adds its own) leave it unclear which one a retry is matched on, so
// that a retry that a proxy sends with the other one first credits twice; a tab or a byte past
// ASCII is not what the operator typed or the CLI prints. Each is a 400 and credits nothing. The
// same key in two accounts is two credits; twenty credits sent at once with one key credit once.
func TestCreditIdempotencyKeyIsOneHeader(t *testing.T) {
	e := startKeysGateway(t)
	e.newKey(t, `{"account":"beta"}`)
	credit := func(account, body string, keys ...string) response {
		t.Helper()
		r, err := sendCredit(e, account, body, keys...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, keys := range [][]string{{"one", "two"}, {"one", "one"}, {"tab\tkey"}, {"caf\xc3\xa9"}, {"obs\xffkey"}, {strings.Repeat("k", 256)}} {
		if r := credit("acme", `{"amount":"1"}`, keys...); r.status != http.StatusBadRequest || !strings.Contains(r.field("error"), "Idempotency-Key") {
			t.Errorf("a credit with Idempotency-Key %q = %d %s; want 400", keys, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme/balance", nil); r.field("balance") != "0" || r.json(t)["limited"] != false {
		t.Fatalf("acme after the refused credits = %s; want nothing credited", r.body)
	}
	if r := credit("acme", `{"amount":"1"}`, strings.Repeat("k", 255)); r.status != http.StatusOK {
		t.Fatalf("a credit with a 255-character key = %d %s", r.status, r.body)
	}
	// One key, two accounts: two credits, each its own.
	for _, account := range []string{"acme", "beta"} {
		if r := credit(account, `{"amount":"1","note":"shared key"}`, "invoice-1"); r.status != http.StatusOK || !strings.Contains(string(r.body), `"account":"`+account+`"`) {
			t.Fatalf("credit of %s with key invoice-1 = %d %s", account, r.status, r.body)
		}
	}
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := sendCredit(e, "beta", `{"amount":"2","note":"once"}`, "race"); err == nil {
				statuses[i] = r.status
			}
		}()
	}
	wg.Wait()
	for _, s := range statuses {
		if s != http.StatusOK {
			t.Fatalf("concurrent credits with one key = %v; want every one answered 200", statuses)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/beta/balance", nil); r.field("balance") != "3" {
		t.Fatalf("beta after 1 and 20 credits of 2 with one key = %s; want 3", r.body)
	}
}

// sendCredit posts a credit to the admin API with each of keys as an Idempotency-Key header.
func sendCredit(e keysEnv, account, body string, keys ...string) (response, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+e.g.admin+"/mediagw/accounts/"+account+"/credit", strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header["Idempotency-Key"] = keys
	return sendRequest(req)
}
