package providers

import (
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"testing"
)

// The caller's credentials, the headers that pick the operator's organisation or project, those
// that make an upstream serve another method or path than the one checked, and those that claim
// another client address than the one reverse_proxy reports never reach the upstream; the
// upstream's own key does, in its auth style.
func TestSetCredentialsReplacesTheCallersHeaders(t *testing.T) {
	h := http.Header{}
	for _, name := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "OpenAI-Organization", "OpenAI-Project", "X-Goog-User-Project",
		"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X-Original-URL", "X-Rewrite-URL",
		"Forwarded", "X-Real-IP", "True-Client-IP", "X-Client-IP", "CF-Connecting-IP", "Cookie"} {
		h.Set(name, "tenant-value")
	}
	setCredentials(h, "operator-key", AuthXAPIKey)
	for name, values := range h {
		for _, v := range values {
			if v == "tenant-value" {
				t.Errorf("%s: the caller's value reached the upstream", name)
			}
		}
	}
	if h.Get("X-Api-Key") != "operator-key" {
		t.Errorf("X-Api-Key = %q, want the upstream's key", h.Get("X-Api-Key"))
	}
}

// ClearCredentials reads a header map of any size (a small one, and one past a map's first
// group of eight) and removes exactly the cleared names: every other header, X-Forwarded-For and
// the client's Content-Type among them, reaches the upstream as it came.
func TestClearCredentialsKeepsEveryOtherHeader(t *testing.T) {
	cleared := []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Openai-Organization", "Openai-Project", "X-Goog-User-Project",
		"X-Http-Method-Override", "X-Http-Method", "X-Method-Override", "X-Original-Url", "X-Rewrite-Url",
		"Forwarded", "X-Real-Ip", "True-Client-Ip", "X-Client-Ip", "Cf-Connecting-Ip", "Cookie"}
	kept := []string{"Content-Type", "Accept", "Accept-Encoding", "User-Agent", "X-Forwarded-For", "X-Forwarded-Proto",
		"X-Forwarded-Host", "Openai-Beta", "Anthropic-Version", "X-Stainless-Lang", "Authorization-Extra", "Cookie2",
		"X-Api-Key-Hint", "Content-Length", "Idempotency-Key", "X-Request-Id"}
	for n := 1; n <= len(kept); n++ {
		h := http.Header{}
		for _, name := range kept[:n] {
			h[name] = []string{"client-value"}
		}
		for _, name := range cleared[:min(n, len(cleared))] {
			h[name] = []string{"tenant-value"}
		}
		ClearCredentials(h)
		if len(h) != n {
			t.Errorf("%d kept headers: %d left: %v", n, len(h), h)
		}
		for _, name := range kept[:n] {
			if got := h[name]; len(got) != 1 || got[0] != "client-value" {
				t.Errorf("%d kept headers: %s = %q", n, name, got)
			}
		}
	}
}

// The credential an upstream of a catalog sets (computed once, its value shared by requests) is
// the one setCredentials makes, in every auth style, and the caller's credentials are removed.
func TestPreparedCredentialsAreSetCredentials(t *testing.T) {
	base, err := url.Parse("https://api.example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	var list []*Provider
	for i, style := range []string{AuthBearer, AuthXAPIKey, AuthGoogAPIKey, ""} {
		list = append(list, &Provider{Name: "p" + strconv.Itoa(i), AuthStyle: style, Models: []string{"m" + strconv.Itoa(i)},
			Upstreams: []*Upstream{{Name: "a", BaseURL: base, APIKey: "operator-key-" + strconv.Itoa(i)}}})
	}
	if _, err := NewCatalog(list); err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		u := p.Upstreams[0]
		if u.credValue == nil {
			t.Fatalf("%s: no prepared credential", p.Name)
		}
		got, want := http.Header{}, http.Header{}
		for _, h := range []http.Header{got, want} {
			for _, name := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Openai-Organization", "Openai-Project", "X-Goog-User-Project", "X-Http-Method-Override", "Content-Type"} {
				h.Set(name, "tenant-value")
			}
		}
		u.SetCredentials(got)
		setCredentials(want, u.APIKey, u.AuthStyle)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s (%q): prepared %v, want %v", p.Name, p.AuthStyle, got, want)
		}
		// On a provider call's own header (no caller's header), the shared value without a
		// clearing is the same header.
		own := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}
		wantOwn := own.Clone()
		u.SetOwnCredentials(own)
		setCredentials(wantOwn, u.APIKey, u.AuthStyle)
		if !reflect.DeepEqual(own, wantOwn) {
			t.Errorf("%s (%q): own %v, want %v", p.Name, p.AuthStyle, own, wantOwn)
		}
		if u.DialAddress() != "api.example.com:443" || u.Origin() != "https://api.example.com" {
			t.Errorf("%s: dial %q, origin %q", p.Name, u.DialAddress(), u.Origin())
		}
	}
}

// Address is the same for spellings of one base URL, and differs for another host, port, scheme
// or path; it never carries user information.
func TestAddressIsNormal(t *testing.T) {
	for _, tc := range []struct{ base, want string }{
		{"https://ark.example.com/api/v3", "https://ark.example.com/api/v3"},
		{"HTTPS://Ark.Example.COM:443/api/v3/", "https://ark.example.com/api/v3"},
		{"http://127.0.0.1:80/v1", "http://127.0.0.1/v1"},
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"},
		{"https://[::1]:443/v1", "https://[::1]/v1"},
		{"https://[::1]:8443/v1", "https://[::1]:8443/v1"},
		{"https://user:secret@ark.example.com/api/v3?x=1", "https://ark.example.com/api/v3"},
		{"http://ark.example.com:443/api/v3", "http://ark.example.com:443/api/v3"},
		{"https://ark.example.com", "https://ark.example.com"},
		// One base URL's spellings are one address.
		{"https://ark.example.com./api/v3", "https://ark.example.com/api/v3"},
		{"https://ark.example.com:/api/v3", "https://ark.example.com/api/v3"},
		{"https://ark.example.com.:443/api/v3", "https://ark.example.com/api/v3"},
		{"https://ark.example.com/api/%763", "https://ark.example.com/api/v3"},
		{"https://ark.example.com/a%2fb", "https://ark.example.com/a/b"},
		{"https://ark.example.com/a%2Fb/", "https://ark.example.com/a/b"},
		{"https://ark.example.com//api/./v3//", "https://ark.example.com/api/v3"},
		{"https://ark.example.com/api/x/../v3", "https://ark.example.com/api/v3"},
		{"https://ark.example.com/", "https://ark.example.com"},
		{"https://[::1]:/v1", "https://[::1]/v1"},
	} {
		u, err := url.Parse(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		if got := (&Upstream{BaseURL: u}).Address(); got != tc.want {
			t.Errorf("Address(%s) = %s, want %s", tc.base, got, tc.want)
		}
	}
}

// A record is bound to the upstream of its name at its address: a new key keeps the binding, a
// name reused for another base URL does not, and a record without an address is bound by name.
func TestBoundNeedsTheSameAddress(t *testing.T) {
	catalog := func(base, key string) *Provider {
		u, _ := url.Parse(base)
		c, err := NewCatalog([]*Provider{{Name: "p", Models: []string{"m"}, Upstreams: []*Upstream{{Name: "a", BaseURL: u, APIKey: key}}}})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := c.Provider("p")
		return p
	}
	first := catalog("https://one.example.com/api/v3", "k1")
	u, _ := first.Upstream("a")
	address := u.Address()
	if got, ok := catalog("https://ONE.example.com:443/api/v3/", "k2").Bound("a", address); !ok || got.APIKey != "k2" {
		t.Fatalf("a rotated key lost the binding: %v %v", got, ok)
	}
	moved := catalog("https://two.example.com/api/v3", "k1")
	if got, ok := moved.Bound("a", address); ok {
		t.Fatalf("a reused name kept the binding: %v", got.BaseURL)
	}
	if _, ok := moved.Bound("a", ""); !ok {
		t.Fatal("a record without an address is no longer bound by name")
	}
	if _, ok := moved.Bound("b", address); ok {
		t.Fatal("an unknown name is bound")
	}
}
