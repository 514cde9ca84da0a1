package auth

import (
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestKeyFromRequest(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		header       map[string]string
		want         string
		err          error
	}{
		{"bearer anywhere", "/v1/chat/completions", map[string]string{"Authorization": "Bearer mg-a"}, "mg-a", nil},
		{"x-api-key on messages", "/v1/messages", map[string]string{"X-Api-Key": "mg-a"}, "mg-a", nil},
		{"x-api-key on a messages sub-path", "/v1/messages/count_tokens", map[string]string{"X-Api-Key": "mg-a"}, "mg-a", nil},
		{"x-api-key elsewhere is ignored", "/v1/chat/completions", map[string]string{"X-Api-Key": "mg-a"}, "", ErrMissingKey},
		{"x-api-key on a look-alike path", "/v1/messagesx", map[string]string{"X-Api-Key": "mg-a"}, "", ErrMissingKey},
		{"x-goog-api-key on v1beta", "/v1beta/models/g:generateContent", map[string]string{"X-Goog-Api-Key": "mg-a"}, "mg-a", nil},
		{"x-goog-api-key on a v1 model method", "/v1/models/g:generateContent", map[string]string{"X-Goog-Api-Key": "mg-a"}, "mg-a", nil},
		{"x-goog-api-key on v1 batchEmbedContents", "/v1/models/g:batchEmbedContents", map[string]string{"X-Goog-Api-Key": "mg-a"}, "mg-a", nil},
		{"x-goog-api-key elsewhere is ignored", "/v1/models", map[string]string{"X-Goog-Api-Key": "mg-a"}, "", ErrMissingKey},
		{"x-goog-api-key on a v1 model retrieve is ignored", "/v1/models/g", map[string]string{"X-Goog-Api-Key": "mg-a"}, "", ErrMissingKey},
		{"x-goog-api-key on a v1 method without a model", "/v1/models/:generateContent", map[string]string{"X-Goog-Api-Key": "mg-a"}, "", ErrMissingKey},
		{"x-goog-api-key on a v1 method without a name", "/v1/models/g:", map[string]string{"X-Goog-Api-Key": "mg-a"}, "", ErrMissingKey},
		{"x-goog-api-key below a v1 model method", "/v1/models/g:generateContent/x", map[string]string{"X-Goog-Api-Key": "mg-a"}, "", ErrMissingKey},
		{"x-goog-api-key on another v1 path with a colon", "/v1/chat/completions:x", map[string]string{"X-Goog-Api-Key": "mg-a"}, "", ErrMissingKey},
		{"?key= on v1beta", "/v1beta/models/g:generateContent?alt=sse&key=mg-a", nil, "mg-a", nil},
		{"?key= percent-encoded", "/v1beta/models/g:generateContent?k%65y=mg%2Da", nil, "mg-a", nil},
		{"?key= on a v1 model method", "/v1/models/g:streamGenerateContent?alt=sse&key=mg-a", nil, "mg-a", nil},
		{"?key= elsewhere is ignored", "/v1/models?key=mg-a", nil, "", ErrMissingKey},
		{"?key= on a v1 model retrieve is ignored", "/v1/models/g?key=mg-a", nil, "", ErrMissingKey},
		{"v1 header and query differ", "/v1/models/g:countTokens?key=mg-b", map[string]string{"X-Goog-Api-Key": "mg-a"}, "", ErrConflictingKeys},
		{"same key twice", "/v1/messages", map[string]string{"Authorization": "Bearer mg-a", "X-Api-Key": "mg-a"}, "mg-a", nil},
		{"two different keys", "/v1/messages", map[string]string{"Authorization": "Bearer mg-a", "X-Api-Key": "mg-b"}, "", ErrConflictingKeys},
		{"header and query differ", "/v1beta/x?key=mg-b", map[string]string{"X-Goog-Api-Key": "mg-a"}, "", ErrConflictingKeys},
		{"malformed bearer", "/v1/messages", map[string]string{"Authorization": "Basic xyz", "X-Api-Key": "mg-a"}, "", ErrMalformedKey},
		{"empty x-api-key", "/v1/messages", map[string]string{"X-Api-Key": " "}, "", ErrMalformedKey},
		{"nothing", "/v1/messages", nil, "", ErrMissingKey},
	} {
		r := httptest.NewRequest("POST", tc.target, nil)
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		got, err := KeyFromRequest(r)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestStripCredentials(t *testing.T) {
	for _, version := range []string{"v1beta", "v1"} {
		stripsEverything(t, "/"+version+"/models/g:streamGenerateContent")
	}
	clean := httptest.NewRequest("GET", "/v1/models?keys=1&monkey=2", nil)
	if StripCredentials(clean) || clean.URL.RawQuery != "keys=1&monkey=2" {
		t.Errorf("a request without credentials was changed: %q", clean.URL.RawQuery)
	}
}

// A RequestURI that still carries a key its URL no longer has (a rewrite before mediagw_auth
// kept it) is rebuilt from the URL whatever else the request carried: a removed Authorization
// header or trailers once left it as sent, and Caddy's log prints it. Strip tells each place.
func TestStripRebuildsTheRequestURIWhateverElseItRemoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(r *http.Request)
		want Stripped
	}{
		{"nothing else", func(*http.Request) {}, StrippedQuery},
		{"an Authorization header", func(r *http.Request) { r.Header.Set("Authorization", "Bearer k") }, StrippedQuery | StrippedAuthorization},
		{"an X-Api-Key header", func(r *http.Request) { r.Header.Set("X-Api-Key", "k") }, StrippedQuery | StrippedHeader},
		{"trailers", func(r *http.Request) { r.Trailer = http.Header{"X-Api-Key": nil} }, StrippedQuery | StrippedTrailers},
	} {
		r := httptest.NewRequest("GET", "/v1/models?alt=sse", nil)
		r.RequestURI = "/v1beta/models?alt=sse&key=secret"
		tc.set(r)
		if got := Strip(r); got != tc.want {
			t.Errorf("%s: Strip = %b, want %b", tc.name, got, tc.want)
		}
		if r.RequestURI != "/v1/models?alt=sse" {
			t.Errorf("%s: RequestURI %q", tc.name, r.RequestURI)
		}
	}
	r := httptest.NewRequest("GET", "/v1/models?key=secret", nil)
	r.Header.Set("Proxy-Authorization", "Basic k")
	if got := Strip(r); got != StrippedQuery|StrippedAuthorization || r.RequestURI != "/v1/models" {
		t.Errorf("Strip = %b, RequestURI %q", got, r.RequestURI)
	}
}

// TestCredentialHeaderSpellings checks that every spelling of a credential header that some
// server reads as the header (case, '_' or '.' for '-') is removed, and no other header.
func TestCredentialHeaderSpellings(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	for _, h := range CredentialHeaders {
		r.Header[strings.ReplaceAll(h, "-", "_")] = []string{"secret"}
		r.Header[strings.ToLower(strings.ReplaceAll(h, "-", "."))] = []string{"secret"}
		r.Header[strings.ToUpper(strings.ReplaceAll(h, "-", ""))] = []string{"secret"}
		if !IsCredentialHeader(h) {
			t.Errorf("%s is not a credential header", h)
		}
	}
	kept := []string{"Content-Type", "X-Api-Keys", "X-Goog-Api-Client", "Api-Key-Id", "Authorization-Hint", "Anthropic-Version"}
	for _, h := range kept {
		r.Header.Set(h, "kept")
	}
	if !StripCredentials(r) {
		t.Fatal("StripCredentials reported nothing removed")
	}
	for name := range r.Header {
		if !slices.Contains(kept, name) {
			t.Errorf("%s kept", name)
		}
	}
	if len(r.Header) != len(kept) {
		t.Errorf("headers left: %v, want %v", r.Header, kept)
	}
}

// stripsEverything checks that StripCredentials removes every credential header, every spelling
// of the key parameter and the trailers of a request to path, and nothing else.
func stripsEverything(t *testing.T, path string) {
	t.Helper()
	r := httptest.NewRequest("POST", path+"?alt=sse&key=mg-a&KEY=mg-b&k%65y=mg-c&keep=1", nil)
	for _, h := range CredentialHeaders {
		r.Header.Set(h, "secret-"+h)
	}
	r.Header.Set("Content-Type", "application/json")
	announced := http.Header{"X-Api-Key": nil}
	r.Trailer = announced
	if !StripCredentials(r) {
		t.Fatal("StripCredentials reported nothing removed")
	}
	for _, h := range CredentialHeaders {
		if r.Header.Get(h) != "" {
			t.Errorf("%s kept", h)
		}
	}
	if r.URL.RawQuery != "alt=sse&keep=1" || r.RequestURI != path+"?alt=sse&keep=1" {
		t.Errorf("%s: query %q, request URI %q", path, r.URL.RawQuery, r.RequestURI)
	}
	if r.Header.Get("Content-Type") != "application/json" {
		t.Error("a non-credential header was removed")
	}
	if r.Trailer != nil {
		t.Errorf("the request trailers were kept: %v", r.Trailer)
	}
}

// FuzzStripCredentials checks that no key parameter survives stripping, however the query is
// written, and that KeyFromRequest never panics on it.
func FuzzStripCredentials(f *testing.F) {
	for _, q := range []string{"key=a", "alt=sse&key=a", "k%65y=a", "KEY=a;key=b", "key", "%zz=1&key=2", "a=1&&key=&"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if strings.ContainsAny(q, " #\r\n\x00") {
			return
		}
		r, err := http.NewRequest("GET", "http://gw/v1beta/models/m:generateContent?"+q, nil)
		if err != nil {
			return
		}
		r.RequestURI = r.URL.RequestURI()
		_, _ = KeyFromRequest(r)
		StripCredentials(r)
		if vals := queryValues(r.URL.RawQuery, KeyQueryParameter); len(vals) > 0 {
			t.Fatalf("%q: key survived in %q", q, r.URL.RawQuery)
		}
		if _, after, _ := strings.Cut(r.RequestURI, "?"); len(queryValues(after, KeyQueryParameter)) > 0 {
			t.Fatalf("%q: key survived in the request URI %q", q, r.RequestURI)
		}
		for k := range r.URL.Query() {
			if strings.EqualFold(k, KeyQueryParameter) {
				t.Fatalf("%q: net/url still reads a key parameter in %q", q, r.URL.RawQuery)
			}
		}
	})
}

func TestWithoutKeyProtocols(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
		had      bool
	}{
		{[]string{"realtime, openai-insecure-api-key.mg-a, openai-beta.realtime-v1"}, []string{"realtime, openai-beta.realtime-v1"}, true},
		{[]string{"realtime", "OPENAI-INSECURE-API-KEY.mg-a"}, []string{"realtime"}, true},
		{[]string{"openai-insecure-api-key.mg-a"}, nil, true},
		{[]string{"realtime, chat"}, []string{"realtime, chat"}, false},
	} {
		got, had := WithoutKeyProtocols(tc.in)
		if had != tc.had || !slices.Equal(got, tc.want) {
			t.Errorf("%q = %q %v, want %q %v", tc.in, got, had, tc.want, tc.had)
		}
	}
	r := httptest.NewRequest("GET", "/v1/realtime", nil)
	r.Header.Set("Sec-WebSocket-Protocol", "openai-insecure-api-key.mg-a")
	if !StripCredentials(r) || len(r.Header) != 0 {
		t.Errorf("left %v", r.Header)
	}
	// Every spelling a server may read as Sec-WebSocket-Protocol loses the key subprotocol, the
	// others kept; a name that only looks alike is left alone.
	r = httptest.NewRequest("GET", "/v1/realtime", nil)
	r.Header["Sec_WebSocket_Protocol"] = []string{"realtime, openai-insecure-api-key.mg-a"}
	r.Header["Sec.Websocket.Protocol"] = []string{"openai-insecure-api-key.mg-b"}
	r.Header["Sec-Websocket-Protocols"] = []string{"openai-insecure-api-key.mg-c"}
	if !StripCredentials(r) || HeaderKindOf("SEC_WEBSOCKET_PROTOCOL") != WebSocketProtocolHeader ||
		!maps.EqualFunc(r.Header, http.Header{"Sec_WebSocket_Protocol": {"realtime"}, "Sec-Websocket-Protocols": {"openai-insecure-api-key.mg-c"}}, slices.Equal) {
		t.Errorf("left %v", r.Header)
	}
	for name, want := range map[string]bool{"Sec-WebSocket-Protocol": true, "sec_websocket_protocol": true, "Sec.WebSocket.Protocol": true,
		"SecWebSocketProtocol": true, "Sec-WebSocket-Protocols": false, "Sec-WebSocket-Protoco": false, "X-Sec-WebSocket-Protocol": false} {
		if IsWebSocketProtocolHeader(name) != want {
			t.Errorf("IsWebSocketProtocolHeader(%q) = %v, want %v", name, !want, want)
		}
	}
}

// HeaderKindOf folds as FoldName does: for every spelling below, its kind is the one the name
// folded by FoldName has among CredentialHeaders and Sec-WebSocket-Protocol.
func TestHeaderKindOfFoldsAsFoldName(t *testing.T) {
	names := []string{"", "-", "Content-Type", "Accept", "User-Agent", "X-Request-Id", "Sec-WebSocket-Key",
		"Authorizations", "Authorizatio", "_Authorization", "A-u-t-h-o-r-i-z-a-t-i-o-n", "pRoXy.AuThOrIzAtIoN",
		"X-Amz-Security-Token-X", "\x7fApi-Key", "Api\x01Key", "Sec-WebSocket-Protocol-X", "Secwebsocketprotocol",
		"X" + strings.Repeat("-", 40) + "Api-Key", strings.Repeat("A", 30)}
	for _, h := range CredentialHeaders {
		names = append(names, h, strings.ToUpper(h), strings.ToLower(h), strings.ReplaceAll(h, "-", "_"),
			strings.ReplaceAll(h, "-", "."), strings.ReplaceAll(h, "-", ""), "-"+h+"_")
	}
	folded := map[string]HeaderKind{"secwebsocketprotocol": WebSocketProtocolHeader}
	for _, h := range CredentialHeaders {
		folded[FoldName(h)] = CredentialHeader
	}
	for _, name := range names {
		if got, want := HeaderKindOf(name), folded[FoldName(name)]; got != want {
			t.Errorf("HeaderKindOf(%q) = %d, want %d", name, got, want)
		}
	}
}

// FuzzHeaderKindOf holds HeaderKindOf to FoldName's reading of any name: its early exits (a
// first or second folded byte no known name has) never miss a spelling.
func FuzzHeaderKindOf(f *testing.F) {
	for _, name := range append([]string{"Accept-Encoding", "X-Stainless-Lang", "X-Forwarded-For", "Sec-Fetch-Mode",
		"Sec-WebSocket-Protocol", "A_p_i-Key", "x.goog-api-key", "P-R-O-X-Y-Authorization"}, CredentialHeaders...) {
		f.Add(name)
	}
	folded := map[string]HeaderKind{"secwebsocketprotocol": WebSocketProtocolHeader}
	for _, h := range CredentialHeaders {
		folded[FoldName(h)] = CredentialHeader
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !utf8.ValidString(name) {
			return // FoldName reads runes; header names are ASCII tokens
		}
		for _, r := range name {
			if r >= utf8.RuneSelf {
				return
			}
		}
		if got, want := HeaderKindOf(name), folded[FoldName(name)]; got != want {
			t.Fatalf("HeaderKindOf(%q) = %d, want %d", name, got, want)
		}
	})
}
