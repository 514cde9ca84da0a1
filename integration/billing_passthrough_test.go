package integration

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"
)

const billedChatCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/v1
			api_key sim-upstream-key
			models sim-chat
		}
		price sim-chat {
			input_tokens 1000
			output_tokens 2000
		}
		key mg-billed-chat {
			account chatters
			budget 0.1
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy 127.0.0.1:{{sim_port}}
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		api_key sim-upstream-key
	}
}
`

// TestPassThroughHoldsAndSettlesTokens: a chat holds its estimate (body bytes / 4 input tokens
// and max_tokens output tokens) against the key's budget and settles from the usage the
// simulator reports (5 input and 5 output tokens: 0.005 + 0.01 = 0.015), streamed or not, so
// that the budget's remainder comes back; a chat whose estimate does not fit is 402 in the
// OpenAI shape; the usage report has the money.
func TestPassThroughHoldsAndSettlesTokens(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	base, g := startSimGateway(t, billedChatCaddyfile, nil)
	chat := func(maxTokens, extra string) response {
		return call(t, "POST", base+"/v1/chat/completions", "mg-billed-chat",
			`{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":`+maxTokens+extra+`}`)
	}
	// About 80 bytes → 20 input tokens (0.02) + 10 output tokens (0.02): a hold of about 0.04.
	if r := chat("10", ""); r.status != 200 {
		t.Fatalf("a chat within the budget = %d %s", r.status, r.body)
	}
	// About 140 bytes: a hold of about 0.055.
	r := chat("10", `,"stream":true,"stream_options":{"include_usage":true}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"usage"`) {
		t.Fatalf("a streamed chat = %d %s", r.status, r.body)
	}
	// Settled at 0.015 each, 0.07 of 0.1 is left and a third chat fits; had the two been
	// charged their estimates (about 0.095), it would not.
	if r := chat("10", ""); r.status != 200 {
		t.Fatalf("a third chat = %d %s; were the first two charged their estimates?", r.status, r.body)
	}
	// 0.055 is left: a chat allowing 40 output tokens holds about 0.1 and is refused.
	r = chat("40", "")
	if r.status != 402 || r.json(t)["error"] == nil || !strings.Contains(string(r.body), "insufficient_quota") {
		t.Fatalf("a chat past the budget = %d %s, want 402 insufficient_quota", r.status, r.body)
	}

	// The records reach the report within its flush interval (2 s). The report spans the day
	// before to the day after, so a run across midnight UTC reads the same sum.
	from, to := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := call(t, "GET", "http://"+g.admin+"/mediagw/usage?format=csv&account=chatters&group_by=account&from="+from+"&to="+to, "", nil)
		lines, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err == nil && len(lines) == 2 && lines[1][len(lines[1])-1] == "0.045" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage report = %d %s, want an amount of 0.045", r.status, r.body)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
