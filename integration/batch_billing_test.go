package integration

import (
	"fmt"
	"strings"
	"testing"
)

// batchBillingCaddyfile adds Anthropic's Message Batches endpoint as docs/providers.md shows
// (endpoint POST /v1/messages/batches) in front of a recording fake, with two priced models of
// different prices, and two keys: one with room, one whose budget fits one request's estimate
// but not two.
const batchBillingCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider anthropic {
			base_url {{upstream_url}}/v1
			api_key  anthropic-operator-key
			auth_style x-api-key
			models   claude-cheap claude-dear
		}
		price claude-cheap {
			input_tokens  1000
			output_tokens 1000
		}
		price claude-dear {
			input_tokens  1000
			output_tokens 2000
		}
		key mg-batch-roomy {
			account batch-roomy
			budget 10
		}
		key mg-batch-tight {
			account batch-tight
			budget 0.1
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route {
			endpoint POST /v1/messages/batches
		}
		reverse_proxy {{upstream_url}} {
			header_up Host {upstream_hostport}
		}
	}
}
`

// batchParams is the params of one request of a batch: a Messages body allowing 30 output tokens.
func batchParams(model string) string {
	return `{"model":"` + model + `","max_tokens":30,"messages":[{"role":"user","content":"hello there"}]}`
}

// heldMicro is the hold of one params at the test's prices, in micro-units: one input token per
// 4 bytes of params, rounded up, and 30 output tokens; a token costs 1000 micro-units per
// thousand-per-million, so 1000 (input, both) and 1000 or 2000 (output) micro-units.
func heldMicro(model string) int64 {
	in := (int64(len(batchParams(model))) + 3) / 4
	out := int64(30) * 1000
	if model == "claude-dear" {
		out *= 2
	}
	return in*1000 + out
}

// batchBody is a Message Batches create of one request per model.
func batchBody(models ...string) string {
	reqs := make([]string, len(models))
	for i, m := range models {
		reqs[i] = fmt.Sprintf(`{"custom_id":"r%d","params":%s}`, i, batchParams(m))
	}
	return `{"requests":[` + strings.Join(reqs, ",") + `]}`
}

// TestMessageBatchIsChargedPerRequest (issue #27): a batch holds, in one hold, the sum of each
// request's estimate at its own model's price, and settles at it (a batch's answer reports no
// usage); a key whose budget fits one request's estimate but not the sum gets 402 in the OpenAI
// shape and the upstream sees nothing.
func TestMessageBatchIsChargedPerRequest(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	up := newProviderFake(t, false)
	base, g := startSimGateway(t, batchBillingCaddyfile, map[string]string{"upstream_url": up.URL})
	batch := func(key string, models ...string) response {
		return call(t, "POST", base+"/v1/messages/batches", key, batchBody(models...))
	}

	// Held at the sum, and settled at it.
	if r := batch("mg-batch-roomy", "claude-cheap", "claude-dear"); r.status != 200 {
		t.Fatalf("a batch within the budget = %d %s", r.status, r.body)
	}
	want := microString(heldMicro("claude-cheap") + heldMicro("claude-dear"))
	r := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/batch-roomy/ledger", "", nil)
	var ledger struct{ Entries []map[string]any }
	decodeJSON(t, r.body, &ledger)
	kinds := map[string]string{}
	for _, e := range ledger.Entries {
		kind, _ := e["kind"].(string)
		amount, _ := e["amount"].(string)
		kinds[kind] = strings.TrimPrefix(amount, "-")
	}
	if len(ledger.Entries) != 2 || kinds["hold"] != want || kinds["settle"] == "" {
		t.Fatalf("the batch's ledger = %s; want one hold of %s (the sum of both requests' estimates) and its settlement", r.body, want)
	}
	if r := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/batch-roomy/balance", "", nil); r.field("held") != "0" {
		t.Fatalf("after the batch, balance = %s; want nothing held", r.body)
	}

	// Each request fits the budget of 0.1 alone, the two do not.
	if heldMicro("claude-dear") > 100_000 || heldMicro("claude-cheap")+heldMicro("claude-dear") <= 100_000 {
		t.Fatalf("the test's prices do not straddle the budget: %d and %d", heldMicro("claude-cheap"), heldMicro("claude-dear"))
	}
	_, before := up.seen()
	r = batch("mg-batch-tight", "claude-cheap", "claude-dear")
	var refusal struct {
		Error struct{ Code, Type string }
	}
	decodeJSON(t, r.body, &refusal)
	if r.status != 402 || refusal.Error.Code != "insufficient_quota" {
		t.Fatalf("a batch past the budget = %d %s; want 402 insufficient_quota in the OpenAI shape", r.status, r.body)
	}
	if _, after := up.seen(); len(after) != len(before) {
		t.Fatalf("the refused batch reached the upstream: %v", after[len(before):])
	}
	if r := batch("mg-batch-tight", "claude-dear"); r.status != 200 {
		t.Fatalf("a batch of one request within the budget = %d %s", r.status, r.body)
	}

	// An upstream that does not answer: the batch's hold is released whole.
	up.Close()
	if r := batch("mg-batch-roomy", "claude-cheap", "claude-dear"); r.status < 500 {
		t.Fatalf("a batch to a closed upstream = %d %s; want a 5xx", r.status, r.body)
	}
	r = call(t, "GET", "http://"+g.admin+"/mediagw/accounts/batch-roomy/ledger", "", nil)
	decodeJSON(t, r.body, &ledger)
	last := ledger.Entries[len(ledger.Entries)-1]
	if len(ledger.Entries) != 4 || last["kind"] != "release" || ledger.Entries[2]["amount"] != "-"+want {
		t.Fatalf("after a batch the upstream did not answer, the ledger = %s; want its hold of %s released", r.body, want)
	}
	if r := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/batch-roomy/balance", "", nil); r.field("held") != "0" {
		t.Fatalf("after the refused batch, balance = %s; want nothing held", r.body)
	}
}

// microString is micro-units as the admin API writes money: a decimal string without trailing
// zeros.
func microString(micro int64) string {
	s := fmt.Sprintf("%d.%06d", micro/1_000_000, micro%1_000_000)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
