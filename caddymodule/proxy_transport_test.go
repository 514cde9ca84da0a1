package caddymodule

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/internal/testport"
)

// The attempt's copy carries the upstream's credential, address and a header map of its own;
// the request reverse_proxy logs after the round trip keeps neither the credential nor any other
// change made for the attempt.
func TestOutgoingKeepsTheCredentialOffTheLoggedRequest(t *testing.T) {
	base, err := url.Parse("https://api.example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	p := &providers.Provider{Name: "p", Models: []string{"m"}, ModelMap: map[string]string{"alias": "m"},
		Upstreams: []*providers.Upstream{{Name: "a", BaseURL: base, APIKey: "operator-key"}}}
	if _, err := providers.NewCatalog([]*providers.Provider{p}); err != nil {
		t.Fatal(err)
	}
	d := providers.NewDispatch(p, p.Upstreams)
	d.Model, d.UpstreamModel, d.Rest = "alias", "m", "/chat/completions"
	req := httptest.NewRequest(http.MethodPost, "http://gateway.test/v1/chat/completions", strings.NewReader(`{}`))
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Content-Type", "application/json")
	before := req.Header.Clone()
	// What mediagw_route set for a reverse_proxy without this transport (the first upstream's
	// credential), and what a tenant may send that no upstream may get.
	req.Header.Set("Authorization", "Bearer first-upstream-key")
	req.Header.Set("X-Api-Key", "tenant-key")
	req.Header.Set("Cookie", "console=tenant-session")
	req.Header.Set("Openai-Organization", "org-tenant")
	tr := ProxyTransport{gzip: true}
	attempt, err := tr.outgoing(req, d, p.Upstreams[0])
	if err != nil {
		t.Fatal(err)
	}
	out := &attempt.request
	if got := out.Header.Get("Authorization"); got != "Bearer operator-key" {
		t.Errorf("outgoing Authorization = %q", got)
	}
	want := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer operator-key"}, "Accept-Encoding": {"gzip"}}
	if fmt.Sprint(out.Header) != fmt.Sprint(want) {
		t.Errorf("outgoing header %v, want %v", out.Header, want)
	}
	if out.URL.Scheme != "https" || out.URL.Path != "/v1/chat/completions" || out.Host != "api.example.com" {
		t.Errorf("outgoing to %s (Host %s)", out.URL, out.Host)
	}
	if fmt.Sprint(req.Header) != fmt.Sprint(before) || req.URL.String() != "http://gateway.test/v1/chat/completions" || req.Host != "gateway.test" {
		t.Errorf("the logged request changed: %v %s %s", req.Header, req.URL, req.Host)
	}
	for _, values := range req.Header {
		for _, v := range values {
			if strings.Contains(v, "operator-key") || strings.Contains(v, "first-upstream-key") {
				t.Fatal("the credential reached the logged request")
			}
		}
	}
}

// {mediagw.upstream} and {mediagw.upstream_name} name the upstream that answered: the first one
// when it answers (mediagw_route's placeholders), the next one after a failover (the transport's);
// {http.auth.user.id} and {mediagw.account} name the caller's key and account (mediagw_auth's).
func TestUpstreamPlaceholdersNameTheAnsweringUpstream(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("XDG_DATA_HOME", dir)
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if _, err := io.WriteString(w, benchAnswer); err != nil {
			return
		}
	}))
	defer live.Close()
	up := strings.TrimPrefix(live.URL, "http://")
	refused := strconv.Itoa(closedPort(t))
	port := strconv.Itoa(closedPort(t))
	config := fmt.Sprintf(`{
	admin off
	persist_config off
	log default {
		output discard
	}
	mediagw {
		storage badger %[1]s
		provider failover {
			models after-failover
			upstream dead {
				base_url http://127.0.0.1:%[2]s/v1
				api_key key-dead
			}
			upstream alive {
				base_url http://%[3]s/v1
				api_key key-alive
				priority 1
			}
		}
		provider direct {
			models first-answers
			upstream first {
				base_url http://%[3]s/v1
				api_key key-first
			}
			upstream second {
				base_url http://127.0.0.1:%[2]s/v1
				api_key key-second
				priority 1
			}
		}
		key mg-test-key {
			account test
			id key-of-test
		}
	}
}
http://127.0.0.1:%[4]s {
`+transportRoute("lb_retries 1", "header_down X-Upstream-Name {mediagw.upstream_name}", "header_down X-Upstream {mediagw.upstream}",
		"header_down X-Key-Id {http.auth.user.id}", "header_down X-Account {mediagw.account}")+`}
`, filepath.Join(dir, "store"), refused, up, port)
	srv, _ := startCaddy(t, config)
	for _, tc := range []struct{ model, name string }{
		{"first-answers", "first"},
		{"after-failover", "alive"},
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:"+port+"/v1/chat/completions",
			bytes.NewReader([]byte(`{"model":"`+tc.model+`","messages":[]}`)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer mg-test-key")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "chatcmpl-1") {
			t.Fatalf("%s: %d %s", tc.model, w.Code, w.Body)
		}
		// mediagw_auth's placeholders: the key's id (never its secret) and its account.
		if got, acct := w.Header().Get("X-Key-Id"), w.Header().Get("X-Account"); got != "key-of-test" || acct != "test" {
			t.Errorf("%s: {http.auth.user.id} = %q, {mediagw.account} = %q; want key-of-test, test", tc.model, got, acct)
		}
		if got := w.Header().Get("X-Upstream-Name"); got != tc.name {
			t.Errorf("%s: {mediagw.upstream_name} = %q, want %q", tc.model, got, tc.name)
		}
		if got := w.Header().Get("X-Upstream"); got != live.URL {
			t.Errorf("%s: {mediagw.upstream} = %q, want %q", tc.model, got, live.URL)
		}
	}
}

// closedPort returns a loopback port reserved for the test and never bound (connections to it
// are refused): package testport keeps every other test and outgoing connection off it.
func closedPort(t *testing.T) int {
	t.Helper()
	return testport.Reserve(t)
}

// An attempt's path is the upstream's base path and the rest of the client's path, whatever the
// client's version prefix was; the client's own string serves when it is that path already.
func TestUpstreamPath(t *testing.T) {
	for _, c := range []struct{ base, rest, client, want string }{
		{"/v1", "/chat/completions", "/v1/chat/completions", "/v1/chat/completions"},
		{"/v1/", "/chat/completions", "/v1/chat/completions", "/v1/chat/completions"},
		{"/openai/v1", "/chat/completions", "/v1/chat/completions", "/openai/v1/chat/completions"},
		{"", "/chat/completions", "/v1/chat/completions", "/chat/completions"},
		{"/", "/chat/completions", "/v1/chat/completions", "/chat/completions"},
		{"/v2", "/chat/completions", "/v1/chat/completions", "/v2/chat/completions"},
		{"/v1", "/models", "/v1/chat/completions", "/v1/models"},
		{"/v1", "/chat/completions", "/v1/chat/completions/", "/v1/chat/completions"},
		{"/v1beta", "/models/gemini:generateContent", "/v1beta/models/gemini:generateContent", "/v1beta/models/gemini:generateContent"},
	} {
		if got := upstreamPath(c.base, c.rest, c.client); got != c.want {
			t.Errorf("upstreamPath(%q, %q, %q) = %q, want %q", c.base, c.rest, c.client, got, c.want)
		}
	}
}

// headerCopy copies every name of a header of any size into a map of its own, and with
// Accept-Encoding and the credential added it allocates no more than a copy into a map sized for
// it, and less when the copy holds at most eight names.
func TestHeaderCopy(t *testing.T) {
	for n := 0; n <= 20; n++ {
		for _, length := range []bool{false, true} {
			h := http.Header{}
			for i := range n {
				h["X-Name-"+strconv.Itoa(i)] = []string{strconv.Itoa(i)}
			}
			if length {
				h["Content-Length"] = []string{"17"}
			}
			c := headerCopy(h, 2)
			want := maps.Clone(h)
			delete(want, "Content-Length")
			if fmt.Sprint(c) != fmt.Sprint(want) {
				t.Fatalf("%d names: copy %v", len(h), c)
			}
			c["Authorization"] = []string{"Bearer operator-key"}
			delete(c, "X-Name-0")
			if len(h) != len(want)+btoi(length) || h["Authorization"] != nil || (n > 0 && h["X-Name-0"] == nil) {
				t.Fatalf("%d names: the copy shares its map with the original", len(h))
			}
			credential := []string{"Bearer operator-key"}
			copied := testing.AllocsPerRun(20, func() {
				c := headerCopy(h, 2)
				c["Accept-Encoding"] = acceptGzip
				c["Authorization"] = credential
				headerSink = c
			})
			sized := testing.AllocsPerRun(20, func() {
				c := make(http.Header, len(h)+2)
				for name, values := range h {
					c[name] = values
				}
				c["Accept-Encoding"] = acceptGzip
				c["Authorization"] = credential
				headerSink = c
			})
			// A map of one group is two allocations: the map and its group.
			if copied > sized || len(want)+2 <= 8 && copied > 2 {
				t.Errorf("%d names: %v allocations, the sized copy %v", len(h), copied, sized)
			}
		}
	}
}

// headerSink keeps TestHeaderCopy's maps on the heap, as an attempt's header is.
var headerSink http.Header

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A chat request as bench/run.sh's client sends it, once reverse_proxy added its names (Via,
// X-Forwarded-*, an empty User-Agent that keeps net/http from sending its own), goes out with
// the upstream's credential and Accept-Encoding in a header of one map group (two allocations,
// not four), and the upstream still gets its Content-Length, which the attempt's header leaves
// out: the transport sends the request's ContentLength.
func TestOutgoingHeaderOfAProxiedRequestFitsOneGroup(t *testing.T) {
	got := make(chan http.Header, 1)
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || string(body) != `{"model":"m"}` || r.ContentLength != int64(len(body)) {
			t.Errorf("upstream read %q (%v), ContentLength %d", body, err, r.ContentLength)
		}
		got <- r.Header.Clone()
	}))
	defer live.Close()
	base, err := url.Parse(live.URL + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	p := &providers.Provider{Name: "p", Models: []string{"m"}, Upstreams: []*providers.Upstream{{Name: "a", BaseURL: base, APIKey: "operator-key"}}}
	if _, err := providers.NewCatalog([]*providers.Provider{p}); err != nil {
		t.Fatal(err)
	}
	d := providers.NewDispatch(p, p.Upstreams)
	d.Model, d.UpstreamModel, d.Rest = "m", "m", "/chat/completions"
	req := httptest.NewRequest(http.MethodPost, "http://gateway.test/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	req.URL.Host = base.Host // reverse_proxy's: the address it dials
	req.Header = http.Header{
		"Content-Length":    {"13"},
		"Content-Type":      {"application/json"},
		"User-Agent":        {""},
		"Via":               {"1.1 Caddy"},
		"X-Forwarded-For":   {"127.0.0.1"},
		"X-Forwarded-Host":  {"gateway.test"},
		"X-Forwarded-Proto": {"http"},
	}
	tr := ProxyTransport{gzip: true}
	credential := []string{"Bearer operator-key"}
	allocs := testing.AllocsPerRun(20, func() {
		c := headerCopy(req.Header, 2)
		c["Accept-Encoding"] = acceptGzip
		c["Authorization"] = credential
		headerSink = c
	})
	if allocs > 2 {
		t.Errorf("the attempt's header takes %v allocations, want a map and its one group", allocs)
	}
	attempt, err := tr.outgoing(req, d, p.Upstreams[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := attempt.request.Header["Content-Length"]; ok || len(attempt.request.Header) != 8 {
		t.Errorf("attempt's header %v", attempt.request.Header)
	}
	resp, err := http.DefaultTransport.RoundTrip(&attempt.request)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h.Get("Content-Length") != "13" || h.Get("Authorization") != "Bearer operator-key" || h.Get("Accept-Encoding") != "gzip" ||
		h.Get("Via") != "1.1 Caddy" || h.Get("X-Forwarded-For") != "127.0.0.1" || h["User-Agent"] != nil {
		t.Errorf("upstream got %v", h)
	}
	if req.Header.Get("Content-Length") != "13" {
		t.Error("the logged request lost its Content-Length")
	}
}
