package integration

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// TestCreditAmountsAreWrittenOneWay: an amount is -?digits(.digits{1,6})?, with no sign on
// zero. "-0" (a credit of nothing, which would make an unlimited account limited, and reads as
// an adjustment), "+5" (a credit the ledger prints as "5") and their kin are refused with 400 by
// the admin API, adjust or not, and by `caddy mediagw account credit` before it calls it; the
// account stays unlimited and its ledger empty.
func TestCreditAmountsAreWrittenOneWay(t *testing.T) {
	e := startKeysGateway(t)
	for _, amount := range []string{"-0", "-0.0", "-0.000000", "+5", "+0", "+0.5", "-+1", "+-1"} {
		for _, adjust := range []string{"", `,"adjust":true`} {
			body := `{"amount":"` + amount + `"` + adjust + `}`
			r := e.adminMoney(t, "POST", "/mediagw/accounts/acme/credit", body,
				map[string]string{"Idempotency-Key": "sign" + amount + adjust, "Content-Type": "application/json"})
			if r.status != http.StatusBadRequest || !strings.Contains(r.field("error"), "not a decimal amount") {
				t.Errorf("credit %s = %d %s; want 400", body, r.status, r.body)
			}
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme/balance", nil); r.status != 200 || r.json(t)["limited"] != false || r.field("balance") != "0" {
		t.Errorf("after the refused credits the balance is %d %s; want unlimited, 0", r.status, r.body)
	}
	if entries := ledgerEntries(t, e.g, "acme"); len(entries) != 0 {
		t.Errorf("the refused credits left entries: %v", entries)
	}
	bin := caddyBinary(t)
	for _, amount := range []string{"-0", "+5"} {
		out, err := exec.Command(bin, "mediagw", "--address", e.g.admin, "account", "credit", "acme", "--adjust", "--", amount).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "no '+'") {
			t.Errorf("caddy mediagw account credit acme -- %s: err %v\n%s", amount, err, out)
		}
	}
	// What is written one way still goes through.
	for i, amount := range []string{"0", "5", "0.5", "-1"} {
		r := e.adminMoney(t, "POST", "/mediagw/accounts/acme/credit", `{"amount":"`+amount+`","adjust":true}`,
			map[string]string{"Idempotency-Key": "plain-" + amount, "Content-Type": "application/json"})
		if r.status != 200 {
			t.Errorf("credit %d of %s = %d %s", i, amount, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme/balance", nil); r.field("balance") != "4.5" {
		t.Errorf("balance %s; want 4.5", r.body)
	}
}

// TestAdminQueriesAreStrict: a ledger page (JSON or CSV) or a key or account list is the page
// asked for or a 400 that says why, never another: a query that does not decode (after=%zz,
// which Go's Query drops, answering the first page) and a cursor or limit given twice (Go keeps
// the first, other servers the last) are refused.
func TestAdminQueriesAreStrict(t *testing.T) {
	e := startKeysGateway(t)
	for i, amount := range []string{"1", "2", "3"} {
		if r := e.adminMoney(t, "POST", "/mediagw/accounts/acme/credit", `{"amount":"`+amount+`"}`,
			map[string]string{"Idempotency-Key": "q" + amount, "Content-Type": "application/json"}); r.status != 200 {
			t.Fatalf("credit %d = %d %s", i, r.status, r.body)
		}
	}
	e.newKey(t, `{"account":"acme"}`)
	e.newKey(t, `{"account":"acme"}`)
	ledger := "/mediagw/accounts/acme/ledger"
	for _, q := range []string{"?after=%zz", "?after=1&after=2", "?limit=1&limit=2", "?limit=%zz", "?after=1;limit=1", "?format=csv&format=json"} {
		for _, csv := range []bool{false, true} {
			req, _ := http.NewRequest("GET", "http://"+e.g.admin+ledger+q, nil)
			if csv {
				req.Header.Set("Accept", "text/csv")
			}
			r := do(t, req)
			if r.status != http.StatusBadRequest || r.field("error") == "" {
				t.Errorf("GET %s%s (csv %v) = %d %s; want 400", ledger, q, csv, r.status, r.body)
			}
		}
		if r := e.admin(t, "GET", ledger+q+"&format=csv", nil); r.status != http.StatusBadRequest {
			t.Errorf("GET %s%s&format=csv = %d %s; want 400", ledger, q, r.status, r.body)
		}
	}
	for _, path := range []string{"/mediagw/keys", "/mediagw/accounts"} {
		for _, q := range []string{"?after=%zz", "?limit=1&limit=5", "?after=a&after=b"} {
			if r := e.admin(t, "GET", path+q, nil); r.status != http.StatusBadRequest || r.field("error") == "" {
				t.Errorf("GET %s%s = %d %s; want 400", path, q, r.status, r.body)
			}
		}
	}
	// Once each, well formed: the page asked for.
	if r := e.admin(t, "GET", ledger+"?after=1&limit=1", nil); r.status != 200 || !strings.Contains(string(r.body), `"amount": "2"`) && !strings.Contains(string(r.body), `"amount":"2"`) {
		t.Errorf("GET %s?after=1&limit=1 = %d %s; want the second credit", ledger, r.status, r.body)
	}
}
