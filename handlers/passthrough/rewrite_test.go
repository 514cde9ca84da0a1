package passthrough

import (
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/mediagw/mediagw/handlers/providers"
)

// TestRewritePath holds rewrite's path to the rule it states: the client's version prefix, if
// any, replaced by the upstream's base path; a request whose prefix is already the base's keeps
// its path as it is (without building it again), and every other gets the base's.
func TestRewritePath(t *testing.T) {
	for _, c := range []struct{ base, path, want string }{
		{"http://u/v1", "/v1/chat/completions", "/v1/chat/completions"},
		{"http://u/v1/", "/v1/chat/completions", "/v1/chat/completions"},
		{"http://u/api/v3", "/v1/chat/completions", "/api/v3/chat/completions"},
		{"http://u/v1beta", "/v1/models/x:generateContent", "/v1beta/models/x:generateContent"},
		{"http://u/v1", "/v1beta/models/x:generateContent", "/v1/models/x:generateContent"},
		{"http://u", "/v1/audio/speech", "/audio/speech"},
		{"http://u/", "/v1/audio/speech", "/audio/speech"},
		{"http://u/v1", "/moderations", "/v1/moderations"}, // no version prefix: the base is put before it
		{"http://u/v1", "/v1", "/v1/v1"},                   // a version alone is no prefix of anything
		{"http://u/v2", "/v1/v2/x", "/v2/v2/x"},            // only the first segment is a prefix
		{"http://u/v1/x", "/v1/x", "/v1/x/x"},              // same length, other path
		{"http://u/v1", "/v2/abcd", "/v1/abcd"},            // same length, other prefix
		{"http://u/a/b", "/v1/a/b", "/a/b/a/b"},            // the path holds the base, but later
		{"http://u/openai/v1", "/v1/chat/completions", "/openai/v1/chat/completions"},
	} {
		base, err := url.Parse(c.base)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("POST", "http://gw"+c.path, nil)
		r.URL.RawPath = "/set"
		rewrite(r, &providers.Upstream{BaseURL: base})
		if r.URL.Path != c.want || r.URL.RawPath != "" || r.Host != base.Host {
			t.Errorf("base %s, path %s: got %q (raw %q, host %q), want %q", c.base, c.path, r.URL.Path, r.URL.RawPath, r.Host, c.want)
		}
	}
}
