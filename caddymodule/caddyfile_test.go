package caddymodule

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/mediagw/mediagw/internal/standardset"
)

var update = flag.Bool("update", false, "rewrite the golden JSON files in testdata/adapt")

// TestCaddyfileAdapt pins what each Caddyfile in testdata/adapt adapts to. Each .caddyfile has a
// .json beside it; run `go test ./caddymodule -run Adapt -update` to rewrite them after a
// deliberate change, and review the diff.
func TestCaddyfileAdapt(t *testing.T) {
	files, _ := filepath.Glob("testdata/adapt/*.caddyfile")
	if len(files) == 0 {
		t.Fatal("no golden Caddyfiles found")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			input, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := adapt(t, file, input)
			golden := strings.TrimSuffix(file, ".caddyfile") + ".json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("adapted JSON differs from %s\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

func adapt(t *testing.T, name string, input []byte) []byte {
	t.Helper()
	adapter := caddyconfig.GetAdapter("caddyfile")
	out, warnings, err := adapter.Adapt(input, map[string]any{"filename": name})
	if err != nil {
		t.Fatalf("adapt: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("warning: %s", w.String())
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "\t"); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// TestCaddyfileErrors checks that bad configuration fails at adapt time, naming file and line.
func TestCaddyfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, caddyfile, wantErr string
	}{
		{"unknown subdirective", "{\n mediagw {\n  colour blue\n }\n}", `unknown subdirective "colour"`},
		{"unknown provider subdirective", "{\n mediagw {\n  provider p {\n   base_url http://x\n   colour blue\n  }\n }\n}", `unknown subdirective "colour"`},
		{"unknown key subdirective", "{\n mediagw {\n  key k {\n   account a\n   colour blue\n  }\n }\n}", `unknown subdirective "colour"`},
		{"bad CIDR", "{\n mediagw {\n  key k {\n   account a\n   allow_ips 10.0.0.0/33\n  }\n }\n}", `invalid CIDR range "10.0.0.0/33"`},
		{"bad IP", "{\n mediagw {\n  key k {\n   account a\n   allow_ips 10.0.0.300\n  }\n }\n}", `invalid IP address`},
		{"duplicate key", "{\n mediagw {\n  key k {\n   account a\n  }\n  key k {\n   account b\n  }\n }\n}", `duplicate key`},
		{"key without account", "{\n mediagw {\n  key k {\n   models *\n  }\n }\n}", `account is required`},
		{"key without secret", "{\n mediagw {\n  key\n }\n}", `key needs a secret`},
		{"bad expiry", "{\n mediagw {\n  key k {\n   account a\n   expires tomorrow\n  }\n }\n}", `RFC 3339`},
		{"expiry of the zero time", "{\n mediagw {\n  key k {\n   account a\n   expires 0001-01-01T00:00:00Z\n  }\n }\n}", `key: expires 0001-01-01T00:00:00Z is before 2000-01-01T00:00:00Z: write the time the key stops working, or for a key that never expires leave expires out`},
		{"playground over plain http", ":80 {\n mediagw_console {\n  user a $2a$04$x\n  playground http://gateway.internal:8080\n }\n}", `playground: http://gateway.internal:8080 would carry the API keys typed into the playground across the network in clear: write https://gateway.internal:8080, or an http URL of a loopback address`},
		{"provider without base_url", "{\n mediagw {\n  provider p {\n   models m\n  }\n }\n}", `base_url is required`},
		{"model served twice", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  provider q {\n   base_url http://b\n   models m\n  }\n }\n}", `model "m" is served by two providers`},
		{"provider defined twice", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  provider p {\n   base_url http://b\n   models n\n  }\n }\n}", `provider "p" is defined twice`},
		{"misspelt global subdirective", "{\n mediagw {\n  provder p {\n   base_url http://a\n  }\n }\n}", `mediagw: unknown subdirective "provder"; did you mean "provider"?, at Caddyfile:3`},
		{"misspelt provider subdirective", "{\n mediagw {\n  provider p {\n   base_url http://a\n   model m\n  }\n }\n}", `provider "p": unknown subdirective "model"; did you mean "models"?, at Caddyfile:5`},
		{"misspelt key subdirective", "{\n mediagw {\n  key k {\n   acount a\n  }\n }\n}", `key: unknown subdirective "acount"; did you mean "account"?`},
		{"misspelt upstream subdirective", "{\n mediagw {\n  provider p {\n   upstream u {\n    base_url http://a\n    wieght 2\n   }\n  }\n }\n}", `unknown subdirective "wieght"; did you mean "weight"?`},
		{"unknown name lists the known ones", "{\n mediagw {\n  colour blue\n }\n}", `unknown subdirective "colour"; the block takes "storage", "task_retention", "disabled_accounts"`},
		{"provider without models", "{\n mediagw {\n  provider p {\n   base_url http://a\n  }\n }\n}", "provider \"p\": no models: add `models <model-id…>`"},
		{"cost of a model not served", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n   cost n 5\n  }\n }\n}", `provider "p": cost of "n", a model it does not serve`},
		{"unknown protocol", "{\n mediagw {\n  provider p {\n   base_url http://a\n   protocol vidu\n   models m\n  }\n }\n}", `provider "p": unknown protocol "vidu": use one of ark, dashscope, gemini, kling, minimax`},
		{"protocol without a name", "{\n mediagw {\n  provider p {\n   base_url http://a\n   protocol\n   models m\n  }\n }\n}", `wrong argument count`},
		{"protocol twice", "{\n mediagw {\n  provider p {\n   base_url http://a\n   protocol gemini\n   protocol ark\n   models m\n  }\n }\n}", `duplicate subdirective "protocol"`},
		{"bad auth style", "{\n mediagw {\n  provider p {\n   base_url http://a\n   auth_style basic\n  }\n }\n}", `auth_style must be`},
		{"duplicate subdirective", "{\n mediagw {\n  task_retention 1h\n  task_retention 2h\n }\n}", `duplicate subdirective "task_retention"`},
		{"answer_memory zero", "{\n mediagw {\n  answer_memory 0\n }\n}", `invalid size "0"`},
		{"answer_memory without a size", "{\n mediagw {\n  answer_memory\n }\n}", `wrong argument count`},
		{"answer_memory twice", "{\n mediagw {\n  answer_memory 1GiB\n  answer_memory 2GiB\n }\n}", `duplicate subdirective "answer_memory"`},
		{"answer_memory_per_account zero", "{\n mediagw {\n  answer_memory_per_account 0\n }\n}", `invalid size "0"`},
		{"answer_memory_per_account twice", "{\n mediagw {\n  answer_memory_per_account 1GiB\n  answer_memory_per_account 2GiB\n }\n}", `duplicate subdirective "answer_memory_per_account"`},
		{"bad storage", "{\n mediagw {\n  storage mysql x\n }\n}", `usage: storage badger`},
		{"redis without url", "{\n mediagw {\n  storage redis\n }\n}", `wrong argument count`},
		{"redis unknown option", "{\n mediagw {\n  storage redis redis://h {\n   colour blue\n  }\n }\n}", `storage redis: unknown subdirective "colour"; the block takes "key_prefix"`},
		{"redis misspelt option", "{\n mediagw {\n  storage redis redis://h {\n   wait_replica 1\n  }\n }\n}", `storage redis: unknown subdirective "wait_replica"; did you mean "wait_replicas"?`},
		{"route create_grace of 0", ":80 {\n mediagw_route {\n  create_grace 0s\n }\n}", "create_grace must be longer than 0"},
		{"route create_grace not a duration", ":80 {\n mediagw_route {\n  create_grace soon\n }\n}", `invalid duration "soon"`},
		{"route misspelt option", ":80 {\n mediagw_route {\n  max_json_bdy 1MiB\n }\n}", `mediagw_route: unknown subdirective "max_json_bdy"; did you mean "max_json_body"?`},
		{"redis key_prefix twice", "{\n mediagw {\n  storage redis redis://h {\n   key_prefix a\n   key_prefix b\n  }\n }\n}", `key_prefix given twice`},
		{"redis tls_client_cert without key", "{\n mediagw {\n  storage redis rediss://h {\n   tls_client_cert c.pem\n  }\n }\n}", `tls_client_cert needs a certificate file and a key file`},
		{"redis wait_replicas zero", "{\n mediagw {\n  storage redis redis://h {\n   wait_replicas 0\n  }\n }\n}", `wait_replicas must be a whole number of replicas, at least 1`},
		{"redis wait_replicas twice", "{\n mediagw {\n  storage redis redis://h {\n   wait_replicas 1\n   wait_replicas 2\n  }\n }\n}", `wait_replicas given twice`},
		{"redis bad wait_timeout", "{\n mediagw {\n  storage redis redis://h {\n   wait_replicas 1\n   wait_timeout 0s\n  }\n }\n}", `wait_timeout must be a duration of at least 1ms`},
		{"redis tls_ca twice", "{\n mediagw {\n  storage redis rediss://h {\n   tls_ca a.pem\n   tls_ca b.pem\n  }\n }\n}", `tls_ca given twice`},
		{"bad retention", "{\n mediagw {\n  task_retention soon\n }\n}", `invalid duration`},
		{"bad hold reconcile interval", "{\n mediagw {\n  hold_reconcile_interval 0s\n }\n}", `hold_reconcile_interval: invalid duration`},
		{"bad callback attempt_timeout", "{\n mediagw {\n  callbacks {\n   attempt_timeout soon\n  }\n }\n}", `invalid duration "soon"`},
		{"upstream beside base_url", "{\n mediagw {\n  provider p {\n   base_url http://a\n   upstream u {\n    base_url http://b\n   }\n  }\n }\n}", `inside each upstream block`},
		{"upstream without base_url", "{\n mediagw {\n  provider p {\n   upstream u {\n    api_key k\n   }\n  }\n }\n}", `upstream "u": base_url is required`},
		{"upstream defined twice", "{\n mediagw {\n  provider p {\n   upstream u {\n    base_url http://a\n   }\n   upstream u {\n    base_url http://b\n   }\n  }\n }\n}", `upstream "u" is defined twice`},
		{"bad weight", "{\n mediagw {\n  provider p {\n   upstream u {\n    base_url http://a\n    weight 0\n   }\n  }\n }\n}", `at least 1`},
		{"bad max_rps", "{\n mediagw {\n  provider p {\n   base_url http://a\n   max_rps 0\n  }\n }\n}", `requests per second above 0`},
		{"omit_stream_options with an argument", "{\n mediagw {\n  provider p {\n   base_url http://a\n   omit_stream_options on\n  }\n }\n}", `wrong argument count`},
		{"tool_image_model of two models", "{\n mediagw {\n  provider p {\n   base_url http://a\n   tool_image_model a b\n  }\n }\n}", `wrong argument count`},
		{"bad upstream max_rps", "{\n mediagw {\n  provider p {\n   upstream u {\n    base_url http://a\n    max_rps fast\n   }\n  }\n }\n}", `requests per second above 0`},
		{"bad priority", "{\n mediagw {\n  provider p {\n   upstream u {\n    base_url http://a\n    priority -1\n   }\n  }\n }\n}", `priority must be`},
		{"unknown upstream subdirective", "{\n mediagw {\n  provider p {\n   upstream u {\n    base_url http://a\n    colour blue\n   }\n  }\n }\n}", `unknown subdirective "colour"`},
		{"model_map arguments", "{\n mediagw {\n  provider p {\n   base_url http://a\n   model_map only-one\n  }\n }\n}", `usage: model_map`},
		{"alias served twice", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  provider q {\n   base_url http://b\n   model_map m m-2024\n  }\n }\n}", `model "m" is served by two providers`},
		{"dynamic mediagw options", ":80 {\n reverse_proxy {\n  dynamic mediagw {\n   x\n  }\n }\n}", `takes no options`},
		{"handler argument", ":80 {\n mediagw_auth extra\n}", `wrong argument count`},
		{"buffered writer without output", "{\n log {\n  output mediagw_buffered {\n   flush_interval 1s\n  }\n }\n}", `mediagw_buffered needs an output`},
		{"buffered writer bad subdirective", "{\n log {\n  output mediagw_buffered {\n   colour blue\n  }\n }\n}", `unknown subdirective "colour"`},
		{"bad account_metrics", "{\n mediagw {\n  account_metrics maybe\n }\n}", `usage: account_metrics on|off`},
		{"endpoint with a wildcard", ":80 {\n mediagw_route {\n  endpoint GET /v1/*\n }\n}", `must be an absolute path without *`},
		{"endpoint without a method", ":80 {\n mediagw_route {\n  endpoint /v1/files\n }\n}", `wrong argument count`},
		{"endpoint in lower case", ":80 {\n mediagw_route {\n  endpoint get /v1/files\n }\n}", `upper-case HTTP method`},
		{"price of an unserved model", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price n {\n   request 1\n  }\n }\n}", `price "n": no provider serves the model`},
		{"price given twice", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   request 1\n  }\n  price m {\n   request 2\n  }\n }\n}", `price "m" is given twice`},
		{"price without a model", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price {\n   request 1\n  }\n }\n}", `price needs a model id`},
		{"price unknown unit", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   per_video 1\n  }\n }\n}", `price "m": unknown subdirective "per_video"; the block takes`},
		{"price misspelt unit", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   secnd 1\n  }\n }\n}", `did you mean "second"?, at Caddyfile:8`},
		{"price unit twice", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   request 1\n   request 2\n  }\n }\n}", `price "m": duplicate subdirective request, at Caddyfile:9`},
		{"price band twice", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   second 1080p 1\n   second 1080p 2\n  }\n }\n}", `duplicate subdirective second 1080p`},
		{"price without a value", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   second\n  }\n }\n}", `price "m": second needs a value`},
		{"price bad amount", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   second 0.1234567\n  }\n }\n}", `at most 6 decimals`},
		{"price negative amount", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   request -1\n  }\n }\n}", `an amount of 0 or more`},
		{"price bad band", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   second 2k 1\n  }\n }\n}", `the resolution must be one of 480p, 720p, 1080p, 4k`},
		{"price tokens and seconds", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   second 1\n   video_tokens 2\n  }\n }\n}", `video_tokens or by second, not both`},
		{"price bad multiplier", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   second 1\n   audio 0\n  }\n }\n}", `audio: want a multiplier above 0`},
		{"price multiplier without video", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   request 1\n   draft 0.5\n  }\n }\n}", `audio and draft multiply a video price`},
		{"price bad image quality", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   image 1024x1024 ultra 1\n  }\n }\n}", `image quality "ultra"`},
		{"price image too many arguments", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   image 1024x1024 high x 1\n  }\n }\n}", `usage: image [<size> [<quality>]] <amount>`},
		{"price nothing priced", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   max_output 100\n  }\n }\n}", `no unit is priced`},
		{"price bad max_seconds", "{\n mediagw {\n  provider p {\n   base_url http://a\n   models m\n  }\n  price m {\n   second 1\n   max_seconds 0\n  }\n }\n}", `max_seconds: want a whole number of at least 1`},
		{"key budget bad period", "{\n mediagw {\n  key k {\n   account a\n   budget 5 week\n  }\n }\n}", `key: usage: budget <amount> [day|month]`},
		{"key budget bad amount", "{\n mediagw {\n  key k {\n   account a\n   budget 0\n  }\n }\n}", `key: budget: want an amount above 0`},
		{"key budget plus", "{\n mediagw {\n  key k {\n   account a\n   budget +5\n  }\n }\n}", `key: budget: want an amount above 0 with at most 6 decimals and no sign, got "+5"`},
		{"member_keys budget plus", "c.example {\n mediagw_console {\n  user a h\n  member_keys {\n   budget +5 day\n  }\n }\n}", `member_keys: budget: want an amount above 0`},
		{"member_keys budget bad period", "c.example {\n mediagw_console {\n  user a h\n  member_keys {\n   budget 5 week\n  }\n }\n}", `member_keys: usage: budget <amount> [day|month]`},
		{"member_keys creates_per_hour zero", "c.example {\n mediagw_console {\n  user a h\n  member_keys {\n   creates_per_hour 0\n  }\n }\n}", `Caddyfile:5`},
		{"currency twice", "{\n mediagw {\n  currency USD\n  currency EUR\n }\n}", `duplicate subdirective "currency"`},
		{"keep_results misspelt option", "{\n mediagw {\n  upload {\n   bucket b\n   keep_results {\n    prefx r/\n   }\n  }\n }\n}", `unknown subdirective "prefx"; did you mean "prefix"?, at Caddyfile:6`},
		{"keep_results zero attempts", "{\n mediagw {\n  upload {\n   bucket b\n   keep_results {\n    attempts 0\n   }\n  }\n }\n}", `Caddyfile:6`},
		{"keep_results argument", "{\n mediagw {\n  upload {\n   bucket b\n   keep_results on\n  }\n }\n}", `wrong argument count`},
		{"duplicate max_spool", ":80 {\n mediagw_route {\n  max_spool 1MiB\n  max_spool 2MiB\n }\n}", `duplicate subdirective "max_spool"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(tc.caddyfile), map[string]any{"filename": "Caddyfile"})
			if err == nil {
				t.Fatalf("adapt succeeded, want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "Caddyfile:") {
				t.Fatalf("error = %q, want it to contain %q and the file and line", err, tc.wantErr)
			}
		})
	}
}

// A key may name a model a provider lists or maps, or any pattern, whether or not it matches;
// a provider may be served by its model_map alone.
// A key may name a model no provider serves (requests for it are 404 model_not_found, and the
// start logs a warning): a model leaving a provider must not stop the gateway.
func TestCaddyfileKeyModelsServed(t *testing.T) {
	caddyfile := "{\n mediagw {\n  key k {\n   account a\n   models m alias gpt-* ? not-served-yet\n  }\n  provider p {\n   base_url http://a\n   models m\n   cost m 2\n  }\n" +
		"  provider q {\n   base_url http://b\n   model_map alias upstream-id\n   cost alias 3\n  }\n }\n}"
	if _, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": "Caddyfile"}); err != nil {
		t.Fatalf("adapt: %v", err)
	}
}
