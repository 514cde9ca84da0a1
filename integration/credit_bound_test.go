package integration

import (
	"strings"
	"testing"
)

// TestCreditsKeepTheBalanceBounded: credits through the admin API cannot take a balance past
// the ledger's bound (9007199254.740991 units), beyond which it would no longer be computed
// exactly: the credit that would is a 400 that says so, and the balance stays as it was.
func TestCreditsKeepTheBalanceBounded(t *testing.T) {
	e := startKeysGateway(t)
	credit := func(amount, key string) response {
		t.Helper()
		return e.adminMoney(t, "POST", "/mediagw/accounts/acme/credit", `{"amount":"`+amount+`"}`,
			map[string]string{"Content-Type": "application/json", "Idempotency-Key": key})
	}
	if r := credit("9007199254.740991", "k1"); r.status != 200 {
		t.Fatalf("a credit of the largest amount = %d %s", r.status, r.body)
	}
	for i, amount := range []string{"0.000001", "9007199254.740991"} {
		r := credit(amount, "k"+string(rune('2'+i)))
		if r.status != 400 || !strings.Contains(r.field("error"), "past") {
			t.Fatalf("a credit of %s past the bound = %d %s, want 400", amount, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme/balance", nil); r.status != 200 || r.field("balance") != "9007199254.740991" {
		t.Fatalf("balance = %d %s", r.status, r.body)
	}
}
