package integration

import (
	"net/http"
	"strings"
	"testing"
)

// TestAdminAPIBodiesAreStrict: what the admin API acts on is exactly what it checked. A member
// given twice (Go's encoding/json keeps the last, other decoders the first), a member that
// differs from a known one only by letter case (encoding/json matches it to the known one), and
// an unknown member are each a 400 naming the member, at the top of a body and inside budget and
// rate, on key creates and patches, account patches and credits; and nothing is changed.
func TestAdminAPIBodiesAreStrict(t *testing.T) {
	e := startKeysGateway(t)
	id, _ := e.newKey(t, `{"account":"acme","rate":{"requests":5,"window":"1m"}}`)
	credit := func(body string) response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+e.g.admin+"/mediagw/accounts/acme/credit", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "strict-"+body)
		return do(t, req)
	}
	for _, tc := range []struct {
		method, path, body, names string
	}{
		{"POST", "/mediagw/keys", `{"account":"acme","account":"beta"}`, `"account"`},
		{"POST", "/mediagw/keys", `{"account":"acme","Account":"beta"}`, `"Account"`},
		{"POST", "/mediagw/keys", `{"account":"acme","RATE":{"requests":1,"window":"1m"}}`, `"RATE"`},
		{"POST", "/mediagw/keys", `{"account":"acme","rate":{"requests":5,"window":"1m","REQUESTS":1000}}`, `"REQUESTS"`},
		{"POST", "/mediagw/keys", `{"account":"acme","rate":{"requests":5,"requests":1000,"window":"1m"}}`, `"requests"`},
		{"POST", "/mediagw/keys", `{"account":"acme","rate":{"requests":5,"window":"1m","burst":9}}`, `"burst"`},
		{"POST", "/mediagw/keys", `{"account":"acme","budget":{"amount":"1","Amount":"1000"}}`, `"Amount"`},
		{"POST", "/mediagw/keys", `{"account":"acme","budget":{"amount":"1","period":"day","Period":""}}`, `"Period"`},
		{"POST", "/mediagw/keys", `{"account":"acme","budget":{"amount":"1","currency":"EUR"}}`, `"currency"`},
		{"POST", "/mediagw/keys", `{"account":"acme","colour":"blue"}`, `"colour"`},
		{"PATCH", "/mediagw/keys/" + id, `{"disabled":true,"disabled":false}`, `"disabled"`},
		{"PATCH", "/mediagw/keys/" + id, `{"rate":{"requests":5,"window":"1m","Window":"1ms"}}`, `"Window"`},
		{"PATCH", "/mediagw/keys/" + id, `{"Budget":{"amount":"1"}}`, `"Budget"`},
		{"PATCH", "/mediagw/accounts/acme", `{"disabled":true,"Disabled":false}`, `"Disabled"`},
		{"PATCH", "/mediagw/accounts/acme", `{"disabled":false,"disabled":true}`, `"disabled"`},
		{"PATCH", "/mediagw/accounts/acme", `{"disabled":true,"why":"x"}`, `"why"`},
	} {
		r := e.admin(t, tc.method, tc.path, tc.body)
		if msg := r.field("error"); r.status != http.StatusBadRequest || !strings.Contains(msg, tc.names) {
			t.Errorf("%s %s %s = %d %s; want 400 naming %s", tc.method, tc.path, tc.body, r.status, r.body, tc.names)
		}
	}
	for body, names := range map[string]string{
		`{"amount":"1","AMOUNT":"1000"}`:               `"AMOUNT"`,
		`{"amount":"1","amount":"1000"}`:               `"amount"`,
		`{"amount":"1","note":"a","Note":"b"}`:         `"Note"`,
		`{"amount":"-1","adjust":false,"Adjust":true}`: `"Adjust"`,
	} {
		if r := credit(body); r.status != http.StatusBadRequest || !strings.Contains(r.field("error"), names) {
			t.Errorf("credit %s = %d %s; want 400 naming %s", body, r.status, r.body, names)
		}
	}
	// Nothing was changed: no key of beta, the key as created, acme enabled and never credited.
	if r := e.admin(t, "GET", "/mediagw/keys?account=beta", nil); r.status != http.StatusOK || strings.Contains(string(r.body), `"beta"`) {
		t.Fatalf("beta's keys = %d %s", r.status, r.body)
	}
	if r := e.admin(t, "GET", "/mediagw/keys/"+id, nil); !strings.Contains(string(r.body), `"rate":{"requests":5,"window":"1m"}`) ||
		!strings.Contains(string(r.body), `"disabled":false`) || !strings.Contains(string(r.body), `"budget":null`) {
		t.Fatalf("the key after the refused patches = %s", r.body)
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme", nil); r.json(t)["disabled"] != false {
		t.Fatalf("acme after the refused patches = %s", r.body)
	}
	if r := e.admin(t, "GET", "/mediagw/accounts/acme/balance", nil); !strings.Contains(string(r.body), `"limited":false`) {
		t.Fatalf("acme's balance after the refused credits = %s", r.body)
	}
	// A page of another site cannot make the operator's browser create a key or credit: Caddy's
	// admin endpoint refuses a request with an Origin (or Sec-Fetch-Mode) it was not given.
	for header, value := range map[string]string{"Origin": "https://attacker.example", "Sec-Fetch-Mode": "no-cors"} {
		req, err := http.NewRequest(http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", strings.NewReader(`{"account":"beta"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set(header, value)
		if r := do(t, req); r.status/100 != 4 {
			t.Fatalf("a key create with %s: %s = %d %s", header, value, r.status, r.body)
		}
	}
	if r := e.admin(t, "GET", "/mediagw/keys?account=beta", nil); r.status != http.StatusOK || strings.Contains(string(r.body), `"beta"`) {
		t.Fatalf("beta's keys after cross-site creates = %d %s", r.status, r.body)
	}
	// The well-formed bodies still work.
	if r := e.admin(t, "PATCH", "/mediagw/keys/"+id, `{"rate":{"requests":7,"window":"1m"},"budget":{"amount":"2.5","period":"day"}}`); r.status != http.StatusOK {
		t.Fatalf("a good patch = %d %s", r.status, r.body)
	}
	if r := credit(`{"amount":"3","note":"top-up","adjust":false}`); r.status != http.StatusOK {
		t.Fatalf("a good credit = %d %s", r.status, r.body)
	}
}

// TestKeyExpiryIsATime: an expiry written is that time. The zero time (year 1, in any offset)
// would read as "never expires", so a time before 2000 is refused with a 400 saying to write
// null for never, on create and patch; null and a later time are taken. The Caddyfile's key
// block refuses it when adapted.
func TestKeyExpiryIsATime(t *testing.T) {
	e := startKeysGateway(t)
	id, _ := e.newKey(t, `{"account":"acme","expires":"2031-01-01T00:00:00Z"}`)
	for _, when := range []string{"0001-01-01T00:00:00Z", "0001-01-01T01:00:00+01:00", "1999-12-31T23:59:59Z", "0000-12-31T23:00:00Z"} {
		for _, call := range [][2]string{{"POST", "/mediagw/keys"}, {"PATCH", "/mediagw/keys/" + id}} {
			body := `{"expires":"` + when + `"}`
			if call[0] == "POST" {
				body = `{"account":"acme","expires":"` + when + `"}`
			}
			r := e.admin(t, call[0], call[1], body)
			if msg := r.field("error"); r.status != http.StatusBadRequest || !strings.Contains(msg, "null") || !strings.Contains(msg, "2000") {
				t.Errorf("%s %s expires %s = %d %s", call[0], call[1], when, r.status, r.body)
			}
		}
	}
	if r := e.admin(t, "GET", "/mediagw/keys/"+id, nil); !strings.Contains(string(r.body), `"expires":"2031-01-01T00:00:00Z"`) {
		t.Fatalf("the key after the refused patches = %s", r.body)
	}
	for body, want := range map[string]string{`{"expires":null}`: `"expires":null`, `{"expires":"2000-01-01T00:00:00Z"}`: `"expires":"2000-01-01T00:00:00Z"`} {
		if r := e.admin(t, "PATCH", "/mediagw/keys/"+id, body); r.status != http.StatusOK || !strings.Contains(string(r.body), want) {
			t.Fatalf("PATCH %s = %d %s", body, r.status, r.body)
		}
	}
	cfg := strings.Replace(keysCaddyfile, "\t\t\tid static-key\n", "\t\t\tid static-key\n\t\t\texpires 0001-01-01T00:00:00Z\n", 1)
	if cfg == keysCaddyfile {
		t.Fatal("the keys Caddyfile changed shape")
	}
	if _, err := e.g.adapt(cfg); err == nil || !strings.Contains(err.Error(), "2000") || !strings.Contains(err.Error(), "leave expires out") {
		t.Fatalf("adapting a key that expires in year 1: %v", err)
	}
}

// TestConsolePlaygroundURLKeepsKeysOffTheWire: the playground sends the API key a user types to
// its gateway URL, so a plain-http URL to anything but loopback would carry keys in clear. Such
// a URL is refused when the Caddyfile is adapted, with an error that says to write https.
func TestConsolePlaygroundURLKeepsKeysOffTheWire(t *testing.T) {
	e := startConsole(t)
	for url, ok := range map[string]bool{
		"http://10.0.0.5:8080":         false,
		"http://gateway.internal":      false,
		"http://127.0.0.1.nip.io":      false,
		"http://[::ffff:10.0.0.5]:80":  false,
		"https://gateway.example.com":  true,
		"http://127.0.0.1:8080":        true,
		"http://127.9.9.9":             true,
		"http://[::1]:8080":            true,
		"http://localhost:8080":        true,
		"https://10.0.0.5:8443/prefix": true,
	} {
		cfg := strings.Replace(consoleCaddyfile, "playground http://127.0.0.1:{{port}}", "playground "+url, 1)
		if cfg == consoleCaddyfile {
			t.Fatal("the console Caddyfile changed shape")
		}
		_, err := e.g.adapt(cfg)
		if ok && err != nil {
			t.Errorf("playground %s: %v", url, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "https://")) {
			t.Errorf("playground %s: adapted (%v); want an error saying to write https", url, err)
		}
	}
}
