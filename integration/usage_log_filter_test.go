package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// filteredUsageCaddyfile writes the usage records to two logs: usage_log through Caddy's filter
// log encoder, whose {{key_filter}} applies to key_id and which deletes account, and plain_log
// as they are.
const filteredUsageCaddyfile = `{
	{{globals}}
	log usage {
		output mediagw_buffered {
			flush_interval 20ms
			output file {{usage_log}} {
				roll_disabled
			}
		}
		format filter {
			wrap json
			key_id {{key_filter}}
			account delete
		}
		include mediagw.usage
	}
	log usage_plain {
		output file {{plain_log}} {
			roll_disabled
		}
		format json
		include mediagw.usage
	}
	log default {
		exclude mediagw.usage
	}
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
		key mg-filtered-a {
			account filtered-a
			budget 10
		}
		key mg-filtered-b {
			account filtered-b
			budget 10
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

// TestUsageRecordsKeepLogFiltersAndFieldOrder: a record's repeating fields are encoded once per
// key and route (usage.recordLoggers), yet Caddy's filter encoder still applies to them on every
// record, the filters of a reloaded config replace the old ones, and each line has every field
// in the documented order with the values of its own request.
func TestUsageRecordsKeepLogFiltersAndFieldOrder(t *testing.T) {
	usageLog, plainLog := filepath.Join(t.TempDir(), "usage.log"), filepath.Join(t.TempDir(), "plain.log")
	vars := map[string]string{"usage_log": usageLog, "plain_log": plainLog, "key_filter": "hash"}
	base, g := startSimGateway(t, filteredUsageCaddyfile, vars)
	chat := func(key string) {
		t.Helper()
		r := call(t, "POST", base+"/v1/chat/completions", key, `{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":10}`)
		if r.status != 200 {
			t.Fatalf("chat with %s = %d %s", key, r.status, r.body)
		}
	}
	chat("mg-filtered-a")
	chat("mg-filtered-a")
	chat("mg-filtered-b")
	lines := waitUsageLines(t, usageLog, 3)

	g.vars["key_filter"] = "replace redacted"
	if err := g.reload(filteredUsageCaddyfile); err != nil {
		t.Fatal(err)
	}
	chat("mg-filtered-a")
	lines = waitUsageLines(t, usageLog, 4)
	plain := waitUsageLines(t, plainLog, 4)

	// The order of Record.Write's fields, as docs/observability.md lists them.
	order := []string{"level", "ts", "logger", "msg", "event", "key_id", "endpoint", "model", "provider", "upstream",
		"cost", "status", "upstream_latency", "amount", "prompt_tokens", "completion_tokens", "total_tokens"}
	for i, line := range lines {
		var rec, unfiltered usageRecord
		decodeJSON(t, line, &rec)
		decodeJSON(t, plain[i], &unfiltered)
		if keys := jsonKeys(t, line); !slices.Equal(keys, order) {
			t.Errorf("record %d has the fields %v, want %v: %s", i, keys, order, line)
		}
		if keys := jsonKeys(t, plain[i]); !slices.Equal(keys, slices.Insert(slices.Clone(order), 5, "account")) {
			t.Errorf("unfiltered record %d has the fields %v: %s", i, keys, plain[i])
		}
		if rec.Account != "" || rec.Event != "request" || rec.Endpoint != "/v1/chat/completions" || rec.Model != "sim-chat" ||
			rec.Provider != "sim" || rec.Upstream != "default" || rec.Status != "200" || rec.Amount != "0.015" ||
			rec.PromptTokens == nil || *rec.PromptTokens != 5 || rec.TotalTokens == nil || *rec.TotalTokens != 10 {
			t.Errorf("record %d = %+v: %s", i, rec, line)
		}
		wantAccount, wantKeyID := "filtered-a", fmt.Sprintf("%.4x", sha256.Sum256([]byte(unfiltered.KeyID)))
		if i == 2 {
			wantAccount = "filtered-b"
		}
		if i == 3 {
			wantKeyID = "redacted" // the reloaded config's filter
		}
		if unfiltered.Account != wantAccount || unfiltered.KeyID == "" || rec.KeyID != wantKeyID {
			t.Errorf("record %d has key_id %q (unfiltered %q %q), want %q: %s", i, rec.KeyID, unfiltered.Account, unfiltered.KeyID, wantKeyID, line)
		}
	}
	if a, b := plainKeyID(t, plain[0]), plainKeyID(t, plain[2]); a == b {
		t.Errorf("the two keys' records have the same key_id %q", a)
	}
}

func plainKeyID(t *testing.T, line []byte) string {
	var rec usageRecord
	decodeJSON(t, line, &rec)
	return rec.KeyID
}

// waitUsageLines waits for the usage log to have n lines and returns them.
func waitUsageLines(t *testing.T, path string, n int) [][]byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(path)
		lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
		if err == nil && len(b) > 0 && len(lines) >= n {
			if len(lines) > n {
				t.Fatalf("the usage log has %d lines, want %d:\n%s", len(lines), n, b)
			}
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("the usage log has not got %d lines (%v):\n%s", n, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jsonKeys lists the member names of the JSON object line, in order.
func jsonKeys(t *testing.T, line []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", line)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
	}
	return keys
}
