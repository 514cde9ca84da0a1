package passthrough

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// The Idempotency-Key that reaches the provider is the account's own: two accounts sending the
// same value send different keys, one account sending it twice sends the same key, and the
// client's value itself never reaches the provider.
func TestRouteScopesIdempotencyKeysByAccount(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	forwarded := func(account, key string) []string {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"doubao"}`))
		r.Header.Set("Content-Type", "application/json")
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: account})
		if err != nil {
			t.Fatal(err)
		}
		route.Done()
		return r.Header.Values("Idempotency-Key")
	}
	a1, a2, b := forwarded("a", "order-123"), forwarded("a", "order-123"), forwarded("b", "order-123")
	if len(a1) != 1 || len(b) != 1 || a1[0] != a2[0] || a1[0] == b[0] || strings.Contains(a1[0]+b[0], "order-123") || !strings.HasPrefix(a1[0], "mg-") {
		t.Fatalf("account a sent %q then %q, account b %q", a1, a2, b)
	}
	if got := forwarded("a", ""); len(got) != 0 {
		t.Fatalf("a request without the header got %q", got)
	}
}
