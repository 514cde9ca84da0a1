package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleAmountsAgreeWithAPI: the console's credit form takes an amount as the admin
// API and the CLI do (money.ParseEntered, docs/billing.md: "written one way,
// -?digits(.digits{1,6})?"): each spelling the API refuses is refused by the form too, and "-0"
// is refused for its form, not sent to tick the adjustment box for a negative amount.
func TestConsoleAmountsAgreeWithAPI(t *testing.T) {
	e := startConsole(t)
	admin := e.login(t, "admin")
	for i, amount := range []string{" 5", "5 ", "\t5", "5\u00a0", "\u30005"} {
		body, _ := json.Marshal(map[string]any{"amount": amount})
		req, _ := http.NewRequest(http.MethodPost, "http://"+e.g.admin+"/mediagw/accounts/acme/credit", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprint("api-", i))
		api := do(t, req)
		if api.status == http.StatusBadRequest && !strings.Contains(string(api.body), "not a decimal amount") {
			t.Fatalf("amount %q: the admin API's 400 is not about the amount: %s", amount, api.body)
		}
		status, _, page := admin.post("/accounts/acme/credit", url.Values{"amount": {amount}, "idempotency_key": {admin.creditForm("acme")}})
		if (api.status == http.StatusBadRequest) != (status == http.StatusBadRequest) {
			t.Errorf("amount %q: admin API %d, console %d (%.80s); want both to refuse or both to credit", amount, api.status, status, page)
		}
	}
	status, _, page := admin.post("/accounts/acme/credit", url.Values{"amount": {"-0"}, "idempotency_key": {admin.creditForm("acme")}})
	if status != http.StatusBadRequest || strings.Contains(page, "negative amount") {
		t.Errorf("amount \"-0\" without adjustment = %d; the console calls it a negative amount to confirm: %t", status, strings.Contains(page, "negative amount"))
	}
}
