package integration

import (
	"net/http"
	"testing"
)

// TestUsageReportQueryIsStrict: the usage report (GET /mediagw/usage, JSON and CSV) is a
// money report like the ledger page: a query that does not decode, or an account, from, to or
// format given twice, must be a 400 (as the ledger and the lists now answer), never a report of
// another account (account=%zz drops the account: every account's usage) or of the first of two.
func TestUsageReportQueryIsStrict(t *testing.T) {
	e := startKeysGateway(t)
	if r := e.admin(t, "GET", "/mediagw/usage?account=acme", nil); r.status != http.StatusOK {
		t.Fatalf("a well-formed report = %d %s", r.status, r.body)
	}
	for _, q := range []string{"?account=%zz", "?account=acme&account=globex", "?account=acme;from=2026-11-01",
		"?from=2026-11-01&from=2026-11-20", "?format=json&format=csv"} {
		for _, accept := range []string{"", "text/csv"} {
			req, _ := http.NewRequest("GET", "http://"+e.g.admin+"/mediagw/usage"+q, nil)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			if r := do(t, req); r.status != http.StatusBadRequest {
				t.Errorf("GET /mediagw/usage%s (Accept %q) = %d %.120s; want 400", q, accept, r.status, r.body)
			}
		}
	}
}
