package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

const frontdoorCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-key
			models sim-video
		}
		provider sim-openai {
			base_url http://127.0.0.1:{{sim_port}}/v1
			api_key sim-key
			models sim-chat sim-image
		}
		key mg-frontdoor-key {
			account acme
		}
		upload {
			bucket media
			endpoint http://127.0.0.1:1
			path_style
			access_key_id test
			secret_access_key test-secret
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_models /v1/models
		mediagw_presign /v1/upload/presign
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		@images path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @images
		mediagw_route
		reverse_proxy 127.0.0.1:{{sim_port}}
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		api_key sim-key
	}
}
`

// TestOneWordingPerCondition checks that the same mistake gets the same answer on every endpoint,
// that a path of the gateway's own endpoints called with the wrong method is a 405 with Allow (a
// pass-through path, a 404), and that error bodies are not HTML-escaped.
func TestOneWordingPerCondition(t *testing.T) {
	base, _ := startSimGateway(t, frontdoorCaddyfile, nil)
	const key = "mg-frontdoor-key"

	// Malformed JSON: one message everywhere; the code is the endpoint's own.
	for _, tc := range []struct{ path, code string }{
		{"/api/v3/contents/generations/tasks", "invalid_request"},
		{"/v1/images/edits", "invalid_request_body"},
		{"/v1/chat/completions", "invalid_request_body"},
		{"/v1/upload/presign", "invalid_request_body"},
	} {
		for _, body := range []string{`{"model":`, `["not","an","object"]`} {
			r := call(t, "POST", base+tc.path, key, body)
			m := r.json(t)
			msg, code := m["message"], m["code"]
			if e, ok := m["error"].(map[string]any); ok {
				msg, code = e["message"], e["code"]
			}
			if r.status != 400 || msg != "the request body must be a JSON object" || code != tc.code {
				t.Errorf("POST %s %s = %d %s", tc.path, body, r.status, r.body)
			}
		}
	}

	// The wrong method on a path of the gateway's own endpoints: 405 with Allow, in the
	// endpoint's shape. On a pass-through path it is no endpoint (DESIGN §7): 404, no Allow.
	for _, path := range []string{"/v1/chat/completions", "/v1/embeddings", "/v1beta/models/sim-chat:generateContent"} {
		r := call(t, "GET", base+path, key, nil)
		requireNotFound(t, r, "GET "+path, "not_found", "")
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/api/v3/contents/generations/tasks", "GET, POST"},
		{"POST", "/api/v3/contents/generations/tasks/cgt-1", "GET, DELETE"},
		{"GET", "/v1/images/edits", "POST"},
		{"GET", "/v1/upload/presign", "POST"},
		{"POST", "/v1/models", "GET, HEAD"},
	} {
		r := call(t, tc.method, base+tc.path, key, nil)
		if r.status != 405 || r.header.Get("Allow") != tc.allow || !strings.Contains(string(r.body), "this endpoint accepts only") {
			t.Errorf("%s %s = %d Allow %q %s", tc.method, tc.path, r.status, r.header.Get("Allow"), r.body)
		}
	}

	// No HTML escaping: the message shows <key> as written.
	r := call(t, "GET", base+"/v1/models", "", nil)
	if r.status != 401 || !strings.Contains(string(r.body), "Bearer <key>") || strings.Contains(string(r.body), `\u003c`) {
		t.Errorf("missing key = %d %s", r.status, r.body)
	}
}

// TestAdminShapesAndCLIMessages checks the admin API's answers for unknown accounts, limits and
// usage, and that the CLI explains mistakes in its own words.
func TestAdminShapesAndCLIMessages(t *testing.T) {
	e := startKeysGateway(t)

	// An account nobody has a key for does not exist, and shows no webhook secret.
	for _, path := range []string{"/mediagw/accounts/nobody", "/mediagw/accounts/nobody/usage"} {
		if r := e.admin(t, "GET", path, nil); r.status != 404 || strings.Contains(string(r.body), "whsec_") {
			t.Errorf("GET %s = %d %s", path, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme", nil); r.status != 200 {
		t.Errorf("account of a configured key = %d %s", r.status, r.body)
	}

	// No limit is null; a window reads as written; usage always has active_tasks.
	id, secret := e.newKey(t, `{"account":"shapes","rate":{"requests":60,"window":"1m"}}`)
	view := e.admin(t, "GET", "/mediagw/keys/"+id, nil)
	for _, want := range []string{`"quota": null`, `"max_active_tasks": null`, `"expires": null`, `"window": "1m"`} {
		if !strings.Contains(strings.ReplaceAll(string(view.body), `":`, `": `), want) {
			t.Errorf("key view lacks %s: %s", want, view.body)
		}
	}
	if r := e.createTask(t, secret, "one"); r.status != 200 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	u := e.admin(t, "GET", "/mediagw/keys/"+id+"/usage", nil).json(t)
	if v, ok := u["active_tasks"]; !ok || v != float64(1) {
		t.Errorf("usage of a key without max_active_tasks = %v, want active_tasks 1", u)
	}
	if v, ok := u["quota"]; !ok || v != nil {
		t.Errorf("usage of a key without quota = %v, want quota null", u)
	}

	bin := caddyBinary(t)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"mediagw"}, args...)...).CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"key", "create", "--account", "a", "--rate", "60/minute", "--address", e.g.admin}, "not a duration; write it like 1m"},
		{[]string{"key", "create", "--account", "a", "--rate", "sixty/1m", "--address", e.g.admin}, "whole number of requests"},
		{[]string{"key", "create", "--account", "a", "--expires", "tomorrow", "--address", e.g.admin}, "RFC 3339"},
		{[]string{"key", "create", "--account", "a", "--allow-ips", "10.0.0.0/99", "--address", e.g.admin}, "not an address or CIDR range"},
		{[]string{"key", "create", "--account", "a", "--quota", "-5", "--address", e.g.admin}, "--quota must be 0 or more"},
		{[]string{"key", "create", "--account", "a", "--max-active-tasks", "0", "--address", e.g.admin}, "--max-active-tasks must be 1 or more"},
		{[]string{"key", "create", "--address", e.g.admin}, "--account is required"},
		{[]string{"account", "show", "nobody", "--address", e.g.admin}, "no account named nobody"},
		{[]string{"key", "show", "key_nope", "--address", e.g.admin}, "no key with id key_nope (HTTP 404"},
		{[]string{"key", "list", "--address", "127.0.0.1:1"}, "is the gateway running? (admin endpoint 127.0.0.1:1"},
	} {
		out, err := run(tc.args...)
		if err == nil || !strings.Contains(out, tc.want) || strings.Contains(out, `{"error"`) || strings.Contains(out, "dial tcp") {
			t.Errorf("caddy mediagw %s: err %v, output:\n%s\nwant it to fail with %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
	help, _ := run("key", "create", "--help")
	if strings.Contains(help, "(default -1)") || strings.Contains(help, "(default: unlimited)") || !strings.Contains(help, "leave it out for no quota") {
		t.Errorf("key create --help:\n%s", help)
	}
	out, err := run("key", "create", "--account", "cli-ok", "--rate", "60/1m", "--quota", "0", "--address", e.g.admin)
	if err != nil || !strings.Contains(out, `"window": "1m"`) || !strings.Contains(out, `"quota": 0`) {
		t.Errorf("key create with valid flags: %v\n%s", err, out)
	}
}

// TestStartupErrorsSayWhatToDo checks the errors of `caddy validate` (which provisions every
// module, as `caddy run` does) for a newcomer's mistakes that only show when the config loads:
// each is one error line that names the option and says what to do. (Mistakes that the
// Caddyfile shows, such as a misspelt option, are TestCaddyfileErrors in caddymodule.)
func TestStartupErrorsSayWhatToDo(t *testing.T) {
	bin := caddyBinary(t)
	validate := func(caddyfile string) string {
		t.Helper()
		dir := t.TempDir()
		path := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(path, []byte(caddyfile), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "validate", "--config", path, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("caddy validate accepted:\n%s", caddyfile)
		}
		return string(out)
	}
	site := "\nhttp://127.0.0.1:1 {\n\tmediagw_auth\n\trespond 204\n}\n"

	out := validate(strings.TrimPrefix(site, "\n"))
	if !strings.Contains(out, "add `mediagw { … }` to the global options block") {
		t.Errorf("without the global option:\n%s", out)
	}
	dir := t.TempDir()
	out = validate("{\n\tmediagw {\n\t\tstorage badger " + dir + "\n\t\tkey {env.MEDIAGW_TEST_UNSET_KEY} {\n\t\t\taccount a\n\t\t}\n\t}\n}\n" + site)
	if strings.Contains(out, "need the mediagw global option") || !strings.Contains(out, "the secret is empty") ||
		!strings.Contains(out, "the environment variable MEDIAGW_TEST_UNSET_KEY is not set") {
		t.Errorf("with an unset key variable:\n%s", out)
	}

	withStorage := func(storage, provider string) string {
		return "{\n\tmediagw {\n\t\t" + storage + "\n\t\tkey k {\n\t\t\taccount a\n\t\t}\n" + provider + "\t}\n}\n" + site
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	locked := t.TempDir()
	held, err := storage.OpenBadger(locked, storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct{ name, caddyfile, want string }{
		{"unset base_url", withStorage("storage badger "+t.TempDir(), "\t\tprovider p {\n\t\t\tbase_url {env.MEDIAGW_TEST_UNSET_URL}\n\t\t\tmodels m\n\t\t}\n"),
			`provider \"p\": base_url is empty: {env.MEDIAGW_TEST_UNSET_URL}: the environment variable MEDIAGW_TEST_UNSET_URL is not set where caddy runs: set it`},
		{"unset api_key", withStorage("storage badger "+t.TempDir(), "\t\tprovider p {\n\t\t\tupstream main {\n\t\t\t\tbase_url http://127.0.0.1:1/v1\n\t\t\t\tapi_key {env.MEDIAGW_TEST_UNSET_API_KEY}\n\t\t\t}\n\t\t\tmodels m\n\t\t}\n"),
			`provider \"p\": upstream \"main\": api_key is empty: {env.MEDIAGW_TEST_UNSET_API_KEY}: the environment variable MEDIAGW_TEST_UNSET_API_KEY is not set`},
		{"storage under a file", withStorage("storage badger "+filepath.Join(file, "data"), ""),
			"give a directory this user can create and write (storage badger <dir> in the mediagw global option)"},
		{"storage used by another process", withStorage("storage badger "+locked, ""),
			"another process (a second gateway?) has this directory open; stop it, give this gateway a directory of its own, or share state between gateways with storage redis"},
		{"redis at nothing", withStorage("storage redis redis://127.0.0.1:1", ""),
			"connection refused (no Redis answers there: start redis-server 6.2 or later at that address, or correct the url of `storage redis`"},
		{"unset redis url", withStorage("storage redis {env.MEDIAGW_TEST_UNSET_REDIS_URL}", ""),
			"storage redis: the url is empty: {env.MEDIAGW_TEST_UNSET_REDIS_URL}: the environment variable MEDIAGW_TEST_UNSET_REDIS_URL is not set"},
		{"unset webhook secret", withStorage("storage badger "+t.TempDir()+"\n\t\tcallbacks {\n\t\t\tsecret {env.MEDIAGW_TEST_UNSET_WEBHOOK_SECRET}\n\t\t}", ""),
			"callbacks secret is empty: {env.MEDIAGW_TEST_UNSET_WEBHOOK_SECRET}: the environment variable MEDIAGW_TEST_UNSET_WEBHOOK_SECRET is not set"},
		{"upload endpoint without a scheme", withStorage("storage badger "+t.TempDir()+"\n\t\tupload {\n\t\t\tbucket media\n\t\t\tendpoint 127.0.0.1:7070\n\t\t}", ""),
			"upload endpoint must be an absolute http(s) URL, such as http://127.0.0.1:7070"},
		{"relay_base without a scheme", withStorage("storage badger "+t.TempDir()+"\n\t\tcallbacks {\n\t\t\trelay_base api.example.com\n\t\t}", ""),
			`callbacks relay_base \"api.example.com\": give this gateway's public base URL, such as https://api.example.com`},
	} {
		out := validate(tc.caddyfile)
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: want %q in:\n%s", tc.name, tc.want, out)
		}
		if strings.Contains(out, "goroutine ") || strings.Count(out, `"level":"error"`) != 1 {
			t.Errorf("%s: want one error line and no stack:\n%s", tc.name, out)
		}
	}
}
