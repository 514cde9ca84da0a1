package integration

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// adminMoney sends a request to the account money routes of the admin API, with headers.
// credit credits account with amount (a decimal string) through the admin API, once per
// idempotencyKey, and fails t unless it is answered 200.
func (e keysEnv) credit(t *testing.T, account, amount, idempotencyKey string) {
	t.Helper()
	if r := e.adminMoney(t, "POST", "/mediagw/accounts/"+account+"/credit", `{"amount":"`+amount+`","note":"test"}`,
		map[string]string{"Idempotency-Key": idempotencyKey, "Content-Type": "application/json"}); r.status != 200 {
		t.Fatalf("credit %s = %d %s", account, r.status, r.body)
	}
}

func (e keysEnv) adminMoney(t *testing.T, method, path, body string, headers map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+e.g.admin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

// TestAccountCreditBalanceAndLedger drives the credit, balance and ledger routes of a running
// gateway: amounts are decimal strings, a credit happens once per Idempotency-Key, a negative
// one needs adjust, and the ledger pages in order, as JSON and as CSV.
func TestAccountCreditBalanceAndLedger(t *testing.T) {
	e := startKeysGateway(t)
	credit := func(body, key string) response {
		t.Helper()
		h := map[string]string{"Content-Type": "application/json"}
		if key != "" {
			h["Idempotency-Key"] = key
		}
		return e.adminMoney(t, "POST", "/mediagw/accounts/acme/credit", body, h)
	}
	for _, tc := range []struct {
		body, key string
		status    int
		says      string
	}{
		{`{"amount":"1"}`, "", 400, "Idempotency-Key"},
		{`{"amount":12.5}`, "k0", 400, "decimal string"},
		{`{"amount":"1.0000001"}`, "k0", 400, "6 decimals"},
		{`{"amount":"1e3"}`, "k0", 400, "decimal"},
		{`{"amount":"9007199254.740992"}`, "k0", 400, "past 9007199254.740991"},
		{`{"amount":"-99999999999999999999","adjust":true}`, "k0", 400, "past 9007199254.740991"},
		{`{"amount":"-2"}`, "k0", 400, "adjust"},
		{`{"amount":"1","extra":true}`, "k0", 400, `unknown member "extra"`},
		{`{"amount":"7"}{"amount":"8"}`, "k0", 400, "must be a JSON object"},
		{`{"amount":"7"} trailing`, "k0", 400, "the body must be"},
	} {
		r := credit(tc.body, tc.key)
		if r.status != tc.status || !strings.Contains(r.field("error"), tc.says) {
			t.Fatalf("credit %s (key %q) = %d %s; want %d saying %q", tc.body, tc.key, r.status, r.body, tc.status, tc.says)
		}
	}
	var first struct {
		Entry   map[string]any `json:"entry"`
		Balance map[string]any `json:"balance"`
	}
	r := credit(`{"amount":"12.5","note":"invoice 7"}`, "k1")
	decodeJSON(t, r.body, &first)
	if r.status != 200 || first.Entry["amount"] != "12.5" || first.Entry["kind"] != "credit" || first.Entry["id"] != "1" ||
		first.Balance["balance"] != "12.5" || first.Balance["held"] != "0" || first.Balance["limited"] != true {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
	if r := credit(`{"amount":"12.5","note":"invoice 7"}`, "k1"); r.status != 200 || !strings.Contains(string(r.body), `"balance":"12.5"`) {
		t.Fatalf("the credit retried with its key = %d %s; want the first answer, nothing more credited", r.status, r.body)
	}
	if r := credit(`{"amount":"99","note":"invoice 8"}`, "k1"); r.status != 409 {
		t.Fatalf("another credit with a used key = %d %s; want 409", r.status, r.body)
	}
	if r := credit(`{"amount":"-2.25","adjust":true,"note":"refund to card"}`, "k2"); r.status != 200 ||
		!strings.Contains(string(r.body), `"kind":"adjust"`) || !strings.Contains(string(r.body), `"balance":"10.25"`) {
		t.Fatalf("adjustment = %d %s", r.status, r.body)
	}
	if r := e.adminMoney(t, "POST", "/mediagw/accounts/nobody/credit", `{"amount":"1"}`, map[string]string{"Idempotency-Key": "k"}); r.status != 404 {
		t.Fatalf("credit to an unknown account = %d %s", r.status, r.body)
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme/balance", nil); r.status != 200 || r.field("balance") != "10.25" || r.field("held") != "0" {
		t.Fatalf("balance = %d %s", r.status, r.body)
	}

	var page struct {
		Entries []map[string]any `json:"entries"`
		Next    string           `json:"next"`
	}
	r = e.admin(t, "GET", "/mediagw/accounts/acme/ledger?limit=1", nil)
	decodeJSON(t, r.body, &page)
	if r.status != 200 || len(page.Entries) != 1 || page.Entries[0]["note"] != "invoice 7" || page.Next != "1" {
		t.Fatalf("first page = %d %s", r.status, r.body)
	}
	page.Next = ""
	r = e.admin(t, "GET", "/mediagw/accounts/acme/ledger?limit=1&after=1", nil)
	decodeJSON(t, r.body, &page)
	if len(page.Entries) != 1 || page.Entries[0]["amount"] != "-2.25" || page.Entries[0]["balance_after"] != "10.25" || page.Next != "" {
		t.Fatalf("second (last) page = %s", r.body)
	}
	// A cursor past what a store reads (2^64-1 on Badger, past 2^63-1 on Redis) was a 500.
	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "after=-1", "after=+1", "format=xml",
		"after=18446744073709551615", "after=9223372036854775808"} {
		if r := e.admin(t, "GET", "/mediagw/accounts/acme/ledger?"+bad, nil); r.status != 400 {
			t.Fatalf("ledger?%s = %d %s; want 400", bad, r.status, r.body)
		}
	}
	for _, asked := range []struct{ query, accept string }{{"?format=csv", ""}, {"", "text/csv"}} {
		r := e.adminMoney(t, "GET", "/mediagw/accounts/acme/ledger"+asked.query, "", map[string]string{"Accept": asked.accept})
		rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err != nil || r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") || len(rows) != 3 {
			t.Fatalf("CSV ledger (%+v) = %d %q, %v", asked, r.status, r.body, err)
		}
		if strings.Join(rows[0], ",") != "id,time,account,key_id,model,ref,hold_id,kind,amount,balance_after,charged,note" ||
			rows[1][8] != "12.5" || rows[2][8] != "-2.25" || rows[2][9] != "10.25" || rows[2][7] != "adjust" {
			t.Fatalf("CSV ledger rows = %q", rows)
		}
	}
}

// TestCLIAccountMoney runs `caddy mediagw account credit|balance|ledger` against a running
// gateway.
func TestCLIAccountMoney(t *testing.T) {
	e := startKeysGateway(t)
	bin := caddyBinary(t)
	run := func(wantOK bool, args ...string) string {
		t.Helper()
		all := append([]string{"mediagw", "--address", e.g.admin}, args...)
		out, err := exec.Command(bin, all...).CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("caddy %s: err %v\n%s", strings.Join(all, " "), err, out)
		}
		return string(out)
	}
	out := run(true, "account", "credit", "acme", "7.5", "--note", "welcome", "--idempotency-key", "cli-1")
	var answer struct {
		Balance struct{ Balance string } `json:"balance"`
	}
	if err := json.Unmarshal([]byte(out), &answer); err != nil || answer.Balance.Balance != "7.5" {
		t.Fatalf("credit printed %q", out)
	}
	run(true, "account", "credit", "acme", "7.5", "--note", "welcome", "--idempotency-key", "cli-1") // once
	if out := run(false, "account", "credit", "acme", "--", "-1"); !strings.Contains(out, "--adjust") {
		t.Fatalf("a negative credit without --adjust: %s", out)
	}
	run(true, "account", "credit", "acme", "--adjust", "--", "-0.5")
	if out := run(false, "account", "credit", "acme", "1.2345678"); !strings.Contains(out, "6 decimals") {
		t.Fatalf("seven decimals: %s", out)
	}
	if out := run(true, "account", "balance", "acme"); !strings.Contains(out, `"balance": "7"`) {
		t.Fatalf("balance printed %s", out)
	}
	rows, err := csv.NewReader(strings.NewReader(run(true, "account", "ledger", "acme", "--csv"))).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][11] != "welcome" || rows[2][8] != "-0.5" {
		t.Fatalf("ledger --csv printed %q, %v", rows, err)
	}
	if out := run(true, "account", "ledger", "acme"); !strings.Contains(out, `"balance_after": "7"`) {
		t.Fatalf("ledger printed %s", out)
	}
}
