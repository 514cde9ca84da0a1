package integration

import (
	"strings"
	"testing"
)

// TestOperatorMessageBatchesAreCheckedPerRequest adds Anthropic's Message Batches endpoint: each
// request's params is checked like a /v1/messages body, so a batch cannot carry a model the key
// does not allow, or another tenant's container, behind an allowed one; the refusal names the
// request. A batch of allowed requests reaches the upstream unchanged.
func TestOperatorMessageBatchesAreCheckedPerRequest(t *testing.T) {
	env := startTenancyGateway(t, "endpoint POST /v1/messages/batches")
	req := func(customID, model, extra string) string {
		return `{"custom_id":"` + customID + `","params":{"model":"` + model + `","max_tokens":9` + extra + `,"messages":[{"role":"user","content":"hi"}]}}`
	}
	for _, tc := range []struct {
		name, body string
		status     int
		param      string
	}{
		{"a model outside the key behind an allowed one", `{"requests":[` + req("ok", "gpt-4o-mini", "") + `,` + req("smuggled", "gpt-5", "") + `]}`, 403, "requests[1].params.model"},
		{"an allowed top-level model over a request's", `{"model":"gpt-4o-mini","requests":[` + req("smuggled", "gpt-5", "") + `]}`, 403, "requests[0].params.model"},
		{"another tenant's container", `{"requests":[` + req("c", "gpt-4o-mini", `,"container":"cntr_of_another"`) + `]}`, 400, "requests[0].params.container"},
	} {
		r := call(t, "POST", env.base+"/v1/messages/batches", "mg-customer-a", tc.body)
		var e struct {
			Error struct{ Message, Param string }
		}
		decodeJSON(t, r.body, &e)
		if r.status != tc.status || e.Error.Param != tc.param {
			t.Fatalf("%s = %d %s; want %d naming %s", tc.name, r.status, r.body, tc.status, tc.param)
		}
		if tc.param != "model" && !strings.Contains(e.Error.Message, "custom_id") {
			t.Fatalf("%s: the message does not name the request: %s", tc.name, e.Error.Message)
		}
	}
	body := `{"requests":[` + req("a", "gpt-4o-mini", "") + `,` + req("b", "gpt-4o-mini", "") + `]}`
	if r := call(t, "POST", env.base+"/v1/messages/batches", "mg-customer-a", body); r.status != 200 || r.field("path") != "/v1/messages/batches" {
		t.Fatalf("an allowed batch = %d %s", r.status, r.body)
	}
	if _, calls := env.openai.seen(); len(calls) != 1 {
		t.Fatalf("the upstream received %v", calls)
	}
}
