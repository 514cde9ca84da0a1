package auth

import (
	"net/http/httptest"
	"testing"
)

func TestStripKeyCopies(t *testing.T) {
	const key = "mg-copy-key"
	for _, tc := range []struct {
		name, target string
		header       map[string]string
		wantQuery    string
		wantGone     []string
		want         Stripped
	}{
		{"no copy", "/v1/chat/completions?alt=sse", map[string]string{"Token": "other", "Via": "1.1 proxy"}, "alt=sse", nil, 0},
		{"another header", "/v1/chat/completions", map[string]string{"Ocp-Apim-Subscription-Key": key, "Token": "Bearer " + key, "X-Portkey-Api-Key": key, "Via": "1.1 " + key, "Accept": "*/*"}, "",
			[]string{"Ocp-Apim-Subscription-Key", "Token", "X-Portkey-Api-Key", "Via"}, StrippedHeader},
		{"percent-encoded in a header", "/v1/chat/completions", map[string]string{"Referer": "https://x.test/?t=%6Dg%2dcopy-key"}, "", []string{"Referer"}, StrippedHeader},
		{"a header named by the key", "/v1/chat/completions", map[string]string{key: "1"}, "", []string{key}, StrippedHeader},
		{"query values", "/v1/chat/completions?a=1&token=" + key + "&auth=%6Dg-copy-key;b=2&subscription-key=x" + key, nil, "a=1&b=2", nil, StrippedQuery},
		{"query name", "/v1/chat/completions?" + key + "&a=1", nil, "a=1", nil, StrippedQuery},
		{"a near key is no copy", "/v1/chat/completions?token=mg-copy-ke&t=MG-COPY-KEY", map[string]string{"Token": "mg-copy-kez"}, "token=mg-copy-ke&t=MG-COPY-KEY", nil, 0},
	} {
		r := httptest.NewRequest("POST", tc.target, nil)
		for k, v := range tc.header {
			r.Header[k] = []string{v}
		}
		got := StripKeyCopies(r, key)
		if got != tc.want || r.URL.RawQuery != tc.wantQuery || r.RequestURI != r.URL.RequestURI() {
			t.Errorf("%s: stripped %v, query %q, RequestURI %q; want %v, %q", tc.name, got, r.URL.RawQuery, r.RequestURI, tc.want, tc.wantQuery)
		}
		for _, name := range tc.wantGone {
			if _, ok := r.Header[name]; ok {
				t.Errorf("%s: %s kept", tc.name, name)
			}
		}
		if len(r.Header) != len(tc.header)-len(tc.wantGone) {
			t.Errorf("%s: headers %v", tc.name, r.Header)
		}
	}
	r := httptest.NewRequest("POST", "/v1/x?token=mg-a", nil)
	if StripKeyCopies(r, "") != 0 || r.URL.RawQuery != "token=mg-a" {
		t.Errorf("an empty key removed %q", r.URL.RawQuery)
	}
}

// TestStripKeyCopiesAllocatesNothingWithoutACopy: the search runs on every request.
func TestStripKeyCopiesAllocatesNothingWithoutACopy(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions?alt=sse&x=%41", nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "OpenAI/Python 1.0")
	r.Header.Set("Referer", "https://x.test/a%20b")
	if n := testing.AllocsPerRun(100, func() { StripKeyCopies(r, "mg-copy-key") }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

func FuzzStripKeyCopies(f *testing.F) {
	f.Add("token=mg-k&a=1", "Via", "1.1 mg-k")
	f.Add("a=%6Dg-k", "Token", "%6d%67%2Dk")
	f.Fuzz(func(t *testing.T, query, name, value string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.RawQuery = query
		r.Header[name] = []string{value}
		StripKeyCopies(r, "mg-k")
		if holdsKey(r.URL.RawQuery, "mg-k") || holdsKey(r.RequestURI, "mg-k") {
			t.Errorf("query %q kept the key: %q", query, r.URL.RawQuery)
		}
		for n, vs := range r.Header {
			if holdsKey(n, "mg-k") || anyHoldsKey(vs, "mg-k") {
				t.Errorf("header %q: %q kept", n, vs)
			}
		}
	})
}
