package integration

import (
	"net/http"
	"strings"
	"testing"
)

// sendUnpriced creates a task for broken-video, a model without a price (its upstream refuses
// connections).
func sendUnpriced(t *testing.T, e keysEnv) response {
	t.Helper()
	req, _ := http.NewRequest("POST", e.base+"/api/v3/contents/generations/tasks",
		strings.NewReader(`{"model":"broken-video","content":[{"type":"text","text":"x"}]}`))
	req.Header.Set("Authorization", "Bearer mg-static-admin-test")
	req.Header.Set("Content-Type", "application/json")
	r, err := sendRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOverdrawnTaskCreateOfUnpricedModel: an account taken below zero (an adjustment)
// is refused a video task create (Ark's task API) of a model without a price with 402, and a
// top-up to exactly 0 lets it through.
func TestOverdrawnTaskCreateOfUnpricedModel(t *testing.T) {
	e := startKeysGateway(t)
	credit := func(body, idem string) {
		t.Helper()
		if r := e.adminMoney(t, "POST", "/mediagw/accounts/acme/credit", body,
			map[string]string{"Idempotency-Key": idem, "Content-Type": "application/json"}); r.status != 200 {
			t.Fatalf("credit %s = %d %s", body, r.status, r.body)
		}
	}
	credit(`{"amount":"1"}`, "c1")
	credit(`{"amount":"-1.000001","adjust":true}`, "c2")
	r := sendUnpriced(t, e)
	if r.status != 402 || !strings.Contains(string(r.body), "below zero") {
		t.Fatalf("an overdrawn account's task create of an unpriced model = %d %s; want 402", r.status, r.body)
	}
	credit(`{"amount":"0.000001"}`, "c3")
	if r := sendUnpriced(t, e); r.status == 402 {
		t.Fatalf("at a balance of exactly 0 = %d %s; want it sent on (the upstream refuses it)", r.status, r.body)
	}
}
