package auth

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// CredentialHeaders are the request headers that carry credentials in some client or protocol.
// All of them are removed from every request that passes authentication, whether or not they
// were used and whether or not the key was valid: none may reach a later handler, a log or an
// upstream. So is every other spelling of them (see IsCredentialHeader): X_Api_Key, Api.Key.
var CredentialHeaders = []string{
	"Authorization",
	"Proxy-Authorization",
	"X-Api-Key",
	"X-Goog-Api-Key",
	"Api-Key",
	"X-Auth-Token",
	"X-Amz-Security-Token",
}

// KeyQueryParameter is the query parameter that carries the key on the generate-content
// protocol (?key=…). It is removed from every request.
const KeyQueryParameter = "key"

// Paths on which the protocol-specific credential places are accepted.
const (
	// MessagesPath is the messages protocol, whose official SDK sends the key as X-Api-Key.
	MessagesPath = "/v1/messages"
	// GenerateContentPrefix is the generate-content protocol under /v1beta, whose official SDK
	// sends the key as X-Goog-Api-Key or ?key=.
	GenerateContentPrefix = "/v1beta/"
	// GenerateContentModelsV1 is where the generate-content protocol's model methods stand under
	// /v1 (/v1/models/{model}:generateContent), where the Google Gen AI SDK sends them from its
	// version 3 on.
	GenerateContentModelsV1 = "/v1/models/"
)

// IsGenerateContentPath reports whether path belongs to the generate-content protocol, where
// X-Goog-Api-Key and ?key= are accepted: any path under /v1beta/, and a method call on a model
// under /v1, /v1/models/{model}:{method}. A path under /v1/models/ without a method
// (/v1/models/{id}, the OpenAI protocol's model retrieve) is not.
func IsGenerateContentPath(path string) bool {
	if strings.HasPrefix(path, GenerateContentPrefix) {
		return true
	}
	rest, ok := strings.CutPrefix(path, GenerateContentModelsV1)
	if !ok || strings.Contains(rest, "/") {
		return false
	}
	model, method, ok := strings.Cut(rest, ":")
	return ok && model != "" && method != ""
}

// ErrConflictingKeys answers a request that carries two different keys.
var ErrConflictingKeys = apierror.New(http.StatusUnauthorized, "invalid_api_key", "the request carries more than one API key; send one")

// KeyFromRequest returns the API key of a request, taken from where the official SDK of the
// endpoint's protocol sends it: "Authorization: Bearer" on every endpoint; also X-Api-Key on
// /v1/messages…; also X-Goog-Api-Key or the key query parameter on the generate-content
// protocol's paths, /v1beta/… and /v1/models/{model}:{method} (IsGenerateContentPath). A credential in
// any other place is ignored (and still removed by StripCredentials). Several places carrying
// different keys is an error; so is a malformed Authorization header.
func KeyFromRequest(r *http.Request) (string, error) {
	var found []string
	if h := r.Header["Authorization"]; len(h) > 0 {
		if len(h) > 1 {
			return "", ErrConflictingKeys
		}
		token, err := bearerToken(h[0])
		if err != nil {
			return "", err
		}
		found = append(found, token)
	}
	path := r.URL.Path
	if path == MessagesPath || strings.HasPrefix(path, MessagesPath+"/") {
		found = append(found, r.Header["X-Api-Key"]...)
	}
	if IsGenerateContentPath(path) {
		found = append(found, r.Header["X-Goog-Api-Key"]...)
		found = append(found, queryValues(r.URL.RawQuery, KeyQueryParameter)...)
	}
	if len(found) == 0 {
		return "", ErrMissingKey
	}
	key := strings.TrimSpace(found[0])
	for _, k := range found[1:] {
		if strings.TrimSpace(k) != key {
			return "", ErrConflictingKeys
		}
	}
	if key == "" || strings.ContainsAny(key, " \t") {
		return "", ErrMalformedKey
	}
	return key, nil
}

// StripCredentials removes every credential header, the key subprotocol of every spelling of
// Sec-WebSocket-Protocol (IsWebSocketProtocolHeader), and every credential-like query parameter
// (see IsCredentialParameter) from r, in place: from its headers, its URL and its RequestURI, so that placeholders, logs and the
// request that a proxy builds from it no longer carry them. It also drops r's request trailers,
// which arrive after the body and so after any check: Caddy's reverse_proxy forwards them, and
// a trailer may carry any header, a key included. (r no longer shares the trailer map that the
// server fills at the end of the body; trailers never announced are kept only on the server's
// own request, which no handler sees.) It reports whether it removed anything.
func StripCredentials(r *http.Request) bool { return Strip(r) != 0 }

// Stripped tells where Strip found and removed credentials in a request: a set of the places
// below, none (0) when it removed nothing.
type Stripped uint8

const (
	// StrippedAuthorization is an Authorization or Proxy-Authorization header spelled so: the
	// two that Caddy's logs redact (unless the server logs credentials).
	StrippedAuthorization Stripped = 1 << iota
	// StrippedHeader is any other credential header (another name, or another spelling of
	// those two), or a key subprotocol of a Sec-WebSocket-Protocol header.
	StrippedHeader
	// StrippedQuery is a credential parameter in the URL's query or in the RequestURI's.
	StrippedQuery
	// StrippedTrailers are the request's trailers.
	StrippedTrailers
	// StrippedPath is a copy of the caller's key in the URL's path (StripKeyCopies).
	StrippedPath
)

// Strip is StripCredentials, reporting where it removed credentials: a caller that must know
// whether a log would have shown them reads that here, without a second pass over the request.
func Strip(r *http.Request) Stripped {
	var stripped Stripped
	if r.Trailer != nil {
		r.Trailer = nil
		stripped |= StrippedTrailers
	}
	for name, protocols := range r.Header {
		switch HeaderKindOf(name) {
		case CredentialHeader:
			delete(r.Header, name)
			if name == "Authorization" || name == "Proxy-Authorization" {
				stripped |= StrippedAuthorization
			} else {
				stripped |= StrippedHeader
			}
			continue
		case OtherHeader:
			continue
		}
		if kept, had := WithoutKeyProtocols(protocols); had {
			stripped |= StrippedHeader
			if len(kept) == 0 {
				delete(r.Header, name)
			} else {
				r.Header[name] = kept
			}
		}
	}
	if r.URL != nil && r.URL.RawQuery != "" {
		if q, ok := withoutCredentialParameters(r.URL.RawQuery); ok {
			r.URL.RawQuery, r.URL.ForceQuery = q, false
			r.RequestURI = r.URL.RequestURI()
			r.Form, r.PostForm = nil, nil
			stripped |= StrippedQuery
		}
	}
	if stripped&StrippedQuery == 0 && r.RequestURI != "" && r.URL != nil {
		// A RequestURI that still differs in its query (say, a copy kept from before a rewrite)
		// is rebuilt from the URL, which no longer carries the key: whatever else was removed.
		if i := strings.IndexByte(r.RequestURI, '?'); i >= 0 {
			if _, has := withoutCredentialParameters(r.RequestURI[i+1:]); has {
				r.RequestURI = r.URL.RequestURI()
				stripped |= StrippedQuery
			}
		}
	}
	return stripped
}

// IsCredentialHeader reports whether a header name reads as one of CredentialHeaders to some
// server: folded as FoldName folds it (any letter case, without '-', '_' and '.'). Servers that hand headers to
// applications as variables (CGI, WSGI, PHP, some proxies) read X_Api_Key, and some X.Api.Key,
// as X-Api-Key; Caddy's logs would print such a header, and the proxy forward it. (The names are
// CredentialHeaders', folded.)
func IsCredentialHeader(name string) bool {
	return HeaderKindOf(name) == CredentialHeader
}

// HeaderKind is what a header name reads as to some server (FoldName): see HeaderKindOf.
type HeaderKind uint8

const (
	// OtherHeader is any header that is neither of the others.
	OtherHeader HeaderKind = iota
	// CredentialHeader is a spelling of one of CredentialHeaders (IsCredentialHeader).
	CredentialHeader
	// WebSocketProtocolHeader is a spelling of Sec-WebSocket-Protocol (IsWebSocketProtocolHeader).
	WebSocketProtocolHeader
)

// HeaderKindOf folds name once, as FoldName folds it, and tells which of the header kinds it
// reads as. It allocates nothing: the header checks run on every header of every request.
func HeaderKindOf(name string) HeaderKind {
	if name == "Authorization" {
		return CredentialHeader // every request's key, spelled as net/http keys it: not folded
	}
	var buf [maxFoldedHeader]byte
	n := 0
	for i := 0; i < len(name); i++ {
		c := headerFold[name[i]]
		switch {
		case c == 0:
			continue // a separator, space or control character, dropped
		case n == 0 && c != 'a' && c != 'p' && c != 'x' && c != 's':
			return OtherHeader // no name below begins otherwise
		case n == 1 && !foldedSecond(buf[0], c):
			return OtherHeader // nor goes on otherwise: Accept-*, X-Forwarded-*, X-Stainless-* end here
		case n == len(buf):
			return OtherHeader // longer than any name below
		}
		buf[n] = c
		n++
	}
	switch string(buf[:n]) {
	case "authorization", "proxyauthorization", "xapikey", "xgoogapikey", "apikey", "xauthtoken", "xamzsecuritytoken":
		return CredentialHeader
	case "secwebsocketprotocol":
		return WebSocketProtocolHeader
	}
	return OtherHeader
}

// foldedSecond reports whether a folded name that begins with first and then c may be one of
// the names HeaderKindOf knows (they begin au, ap, pr, xa, xg or se).
func foldedSecond(first, c byte) bool {
	switch first {
	case 'a':
		return c == 'u' || c == 'p'
	case 'p':
		return c == 'r'
	case 'x':
		return c == 'a' || c == 'g'
	}
	return c == 'e' // 's'
}

// maxFoldedHeader is the length of the longest folded name HeaderKindOf knows.
const maxFoldedHeader = len("secwebsocketprotocol")

// headerFold maps each byte of a header name to its folded byte (FoldName's rule, ASCII: header
// names are tokens), or to 0 for the bytes FoldName drops.
var headerFold = func() (t [256]byte) {
	for c := range t {
		switch {
		case c <= ' ' || c == 0x7f || c == '-' || c == '_' || c == '.':
		case c >= 'A' && c <= 'Z':
			t[c] = byte(c) + 'a' - 'A'
		default:
			t[c] = byte(c)
		}
	}
	return t
}()

// KeyProtocolPrefix begins the WebSocket subprotocol in which OpenAI's SDKs send the API key
// from a browser (Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.<key>).
const KeyProtocolPrefix = "openai-insecure-api-key."

// IsWebSocketProtocolHeader reports whether a header name reads as Sec-WebSocket-Protocol to
// some server (FoldName): Sec_WebSocket_Protocol and Sec.WebSocket.Protocol too, which Caddy
// keeps when its servers options expected_underscore_headers or expected_dot_headers name them.
// The key subprotocol (KeyProtocolPrefix) is removed from each of them.
func IsWebSocketProtocolHeader(name string) bool {
	return HeaderKindOf(name) == WebSocketProtocolHeader
}

// WithoutKeyProtocols returns the values of a Sec-WebSocket-Protocol header without the
// subprotocols that carry a key (KeyProtocolPrefix, in any case), the rest kept in order; and
// whether there were any.
func WithoutKeyProtocols(values []string) ([]string, bool) {
	had := false
	for _, v := range values {
		if containsFold(v, KeyProtocolPrefix) {
			had = true
		}
	}
	if !had {
		return values, false
	}
	var kept []string
	for _, v := range values {
		var tokens []string
		for token := range strings.SplitSeq(v, ",") {
			if token = strings.TrimSpace(token); token != "" && !containsFold(token, KeyProtocolPrefix) {
				tokens = append(tokens, token)
			}
		}
		if len(tokens) > 0 {
			kept = append(kept, strings.Join(tokens, ", "))
		}
	}
	return kept, true
}

// containsFold reports whether s holds the lowercase ASCII sub in any letter case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// queryValues returns the values of the parameter name in a raw query, decoded as a browser
// would. Undecodable pairs are skipped.
func queryValues(rawQuery, name string) []string {
	var values []string
	for _, pair := range splitQuery(rawQuery) {
		k, v, _ := strings.Cut(pair, "=")
		if !isParameter(k, name) {
			continue
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			values = append(values, dv)
		} else {
			values = append(values, v)
		}
	}
	return values
}

// withoutCredentialParameters returns rawQuery without the pairs whose name is credential-like
// (IsCredentialParameter), keeping every other pair byte for byte, and whether any pair was
// removed.
func withoutCredentialParameters(rawQuery string) (string, bool) {
	pairs := splitQuery(rawQuery)
	kept := pairs[:0:0]
	for _, pair := range pairs {
		k, _, _ := strings.Cut(pair, "=")
		if !IsCredentialParameter(k) {
			kept = append(kept, pair)
		}
	}
	if len(kept) == len(pairs) {
		return rawQuery, false
	}
	return strings.Join(kept, "&"), true
}

// splitQuery splits a raw query into its pairs at '&' and ';' (some servers accept both).
func splitQuery(rawQuery string) []string {
	return strings.FieldsFunc(rawQuery, func(r rune) bool { return r == '&' || r == ';' })
}

// credentialParameters are the query parameter names, folded by credentialName, with which an
// upstream may take a credential: key (generate-content), api_key, apikey, api-key, access_token,
// the names of the credential headers (x-api-key, x-goog-api-key, authorization), and
// auth_token, api_token.
var credentialParameters = []string{"key", "apikey", "accesstoken", "xapikey", "xgoogapikey", "authorization",
	"authtoken", "apitoken", "xauthtoken", "xamzsecuritytoken"}

// IsCredentialParameter reports whether a raw query parameter name reads as a credential's to
// some server: decoded as a browser would (a name that does not decode is read as it is), in any
// case, without spaces, control characters, '-', '_' and '.', and without an array suffix
// ("key[]", "key[0]"). So "api_key", "api%5Fkey", "API-KEY", "%6Bey", "KEY", "key%00" and
// "key%5B%5D" are all credential parameters.
func IsCredentialParameter(rawName string) bool {
	decoded, err := url.QueryUnescape(rawName)
	if err != nil {
		decoded = rawName
	}
	if i := strings.IndexByte(decoded, '['); i >= 0 {
		decoded = decoded[:i]
	}
	return slices.Contains(credentialParameters, FoldName(decoded))
}

// FoldName is a header or parameter name as servers that take other spellings of it read it: in
// lower case, without spaces, control characters, '-', '_' and '.' ("X_HTTP.Method" and
// "x-http-method" are both "xhttpmethod").
func FoldName(name string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f || r == '-' || r == '_' || r == '.' {
			return -1
		}
		return unicode.ToLower(r)
	}, name)
}

// isParameter reports whether a raw parameter name decodes to name. A name that does not
// decode is compared as it is, so that "key" can never hide behind a bad escape elsewhere.
func isParameter(rawName, name string) bool {
	decoded, err := url.QueryUnescape(rawName)
	if err != nil {
		decoded = rawName
	}
	return strings.EqualFold(strings.TrimSpace(decoded), name)
}
