package providers

import (
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"testing"
)

// The caller's credentials and the headers that pick the operator's organisation or project
// never reach the upstream; the upstream's own key does, in its auth style.
func TestSetCredentialsReplacesTheCallersHeaders(t *testing.T) {
	h := http.Header{}
	for _, name := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "OpenAI-Organization", "OpenAI-Project", "X-Goog-User-Project"} {
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
			for _, name := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Openai-Organization", "Openai-Project", "X-Goog-User-Project", "Content-Type"} {
				h.Set(name, "tenant-value")
			}
		}
		u.SetCredentials(got)
		setCredentials(want, u.APIKey, u.AuthStyle)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s (%q): prepared %v, want %v", p.Name, p.AuthStyle, got, want)
		}
		if u.DialAddress() != "api.example.com:443" || u.Origin() != "https://api.example.com" {
			t.Errorf("%s: dial %q, origin %q", p.Name, u.DialAddress(), u.Origin())
		}
	}
}
