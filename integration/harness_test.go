package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/mediagw/mediagw/internal/standardset"
	"github.com/mediagw/mediagw/internal/testbrowser"
	"github.com/mediagw/mediagw/internal/testport"

	_ "github.com/mediagw/mediagw/caddymodule"
)

func TestMain(m *testing.M) {
	// Keep Caddy's autosave and data out of the developer's home directory.
	dir, err := os.MkdirTemp("", "mediagw-integration-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Setenv("XDG_DATA_HOME", dir)
	prepareTools()
	code := m.Run()
	os.RemoveAll(dir)
	removeCaddyBinary()
	os.Exit(code)
}

// prepareTools starts, in the background, the builds and installs that later tests wait for (the
// caddy binary, versitygw, the Node SDKs, chromium), so that on a fresh machine they overlap with the
// in-process tests that run first instead of adding to them. Each is done once either way: a
// test that needs one waits for it, and reports its error. A run of chosen tests (-run) builds
// only what those tests ask for.
func prepareTools() {
	if !flag.Parsed() {
		flag.Parse() // m.Run would parse them later; reading -run needs them now
	}
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" {
		return
	}
	for _, prepare := range []func() (string, error){buildCaddy, buildVersitygw, installNodeSDKs, testbrowser.Chromium} {
		// The result is kept by each one's sync.Once, for the test that needs it.
		go func() { _, _ = prepare() }()
	}
}

// gateway is a Caddy instance running in this process.
type gateway struct {
	t     *testing.T
	admin string // admin endpoint address, host:port
	vars  map[string]string
}

// freePort returns a loopback port reserved for the rest of the test (package testport): no
// outgoing connection and no other test on the machine is given it meanwhile, so a gateway can
// bind it late, or again after a restart.
func freePort(t *testing.T) int {
	t.Helper()
	return testport.Reserve(t)
}

// startGateway loads a Caddyfile into the in-process Caddy. In the Caddyfile, {{admin}} is
// replaced by the admin address, {{data}} by a fresh store directory and {{NAME}} by vars[NAME].
// The global options block must begin with `{{globals}}`.
func startGateway(t *testing.T, caddyfile string, vars map[string]string) *gateway {
	t.Helper()
	g := &gateway{t: t, admin: fmt.Sprintf("127.0.0.1:%d", freePort(t)), vars: map[string]string{}}
	for k, v := range vars {
		g.vars[k] = v
	}
	g.vars["data"] = t.TempDir()
	g.vars["globals"] = "admin " + g.admin + "\n\tpersist_config off\n\tdefault_bind 127.0.0.1"
	cfg, err := g.adapt(caddyfile)
	if err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatalf("loading config: %v", err)
	}
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Errorf("stopping caddy: %v", err)
		}
	})
	return g
}

// startSimGateway starts a Caddyfile whose gateway site listens on {{port}} and whose simulator
// listens on {{sim_port}}, both free loopback ports, and returns the gateway's base URL.
func startSimGateway(t *testing.T, caddyfile string, vars map[string]string) (string, *gateway) {
	t.Helper()
	port := freePort(t)
	all := map[string]string{"port": fmt.Sprint(port), "sim_port": fmt.Sprint(freePort(t))}
	for k, v := range vars {
		all[k] = v
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port), startGateway(t, caddyfile, all)
}

func (g *gateway) render(caddyfile string) string {
	for k, v := range g.vars {
		caddyfile = strings.ReplaceAll(caddyfile, "{{"+k+"}}", v)
	}
	return caddyfile
}

func (g *gateway) adapt(caddyfile string) ([]byte, error) {
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(g.render(caddyfile)), map[string]any{"filename": "Caddyfile"})
	return cfg, err
}

// reload posts a new Caddyfile to the admin API, as `caddy reload` does.
func (g *gateway) reload(caddyfile string) error {
	body := g.render(caddyfile)
	req, _ := http.NewRequest(http.MethodPost, "http://"+g.admin+"/load", strings.NewReader(body))
	req.Header.Set("Content-Type", "text/caddyfile")
	// Each load that succeeds replaces Caddy's admin server, which closes the connections the
	// old one kept alive: a POST on such a connection is reset, and Go does not retry a POST.
	// So every load goes on a connection of its own.
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("reload: %s: %s", resp.Status, msg)
	}
	// The old servers close their keep-alive connections, and for a moment after /load returns
	// a new connection can still be accepted by an old server that is shutting down and be
	// closed unanswered (seen as EOF; Go retries only idempotent requests on a reused
	// connection). That is Caddy's reload behaviour, not mediagw's: start with fresh
	// connections once the old servers are gone.
	client.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond)
	return nil
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object (%v): %s", err, r.body)
	}
	return m
}

var client = &http.Client{Timeout: 30 * time.Second}

// call sends a request with an optional API key and JSON body. Call it from the test's own
// goroutine; other goroutines use send.
func call(t *testing.T, method, url, key string, body any) response {
	t.Helper()
	r, err := send(method, url, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send is call without a *testing.T, for use from any goroutine.
func send(method, url, key string, body any) (response, error) {
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return response{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return sendRequest(req)
}

// do sends a prepared request and reads the whole answer.
func do(t *testing.T, req *http.Request) response {
	t.Helper()
	r, err := sendRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sendRequest(req *http.Request) (response, error) {
	resp, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// field is one string field of a JSON object answer ("" when absent or not JSON).
func (r response) field(name string) string {
	var m map[string]any
	_ = json.Unmarshal(r.body, &m)
	s, _ := m[name].(string)
	return s
}

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// errorsAs is errors.As, named so tests read well next to SDK error types.
func errorsAs(err error, target any) bool { return errors.As(err, target) }

// apiError is a gateway error answer's fields, whatever the shape of its endpoint's protocol
// (OpenAI's, Anthropic's on /v1/messages, Google's on generateContent: docs/api.md#errors).
type apiError struct {
	code, param, message string
	// kind is "not_found" for a 404 in any shape (not_found_error, NOT_FOUND), else the
	// shape's own type or status.
	kind string
}

// apiError reads r as a gateway error answer in any of the protocols' shapes.
func (r response) apiError(t *testing.T) apiError {
	t.Helper()
	var b struct {
		Type  string
		Error struct {
			Code    json.RawMessage
			Type    string
			Status  string
			Message string
			Param   string
			Details []struct {
				Reason   string
				Metadata map[string]string
			}
		}
	}
	decodeJSON(t, r.body, &b)
	e := apiError{message: b.Error.Message, param: b.Error.Param, kind: b.Error.Type}
	if len(b.Error.Details) > 0 { // Google's: code is the status, the gateway's code a detail's reason
		e.code, e.param, e.kind = b.Error.Details[0].Reason, b.Error.Details[0].Metadata["param"], b.Error.Status
	} else {
		_ = json.Unmarshal(b.Error.Code, &e.code)
	}
	if e.kind == "not_found_error" || e.kind == "NOT_FOUND" {
		e.kind = "not_found"
	}
	return e
}
