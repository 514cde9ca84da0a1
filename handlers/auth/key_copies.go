package auth

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/mediagw/mediagw/internal/percent"
)

// StripKeyCopies removes from r every other place that holds key, the caller's own key, which
// the request carried where KeyFromRequest reads it: a client configured for another gateway may
// send it again under a name the gateway does not list (Ocp-Apim-Subscription-Key,
// X-Portkey-Api-Key, Token, ?token=, ?auth= …). A header whose name or any value holds the key,
// as written or percent-encoded (%6Dg-…, as a URL's decoder reads it), is removed whole; so is a
// query pair whose name or value holds it, the other pairs kept byte for byte, and the
// RequestURI is rebuilt. Call it after Strip, with the key KeyFromRequest returned (an empty key
// removes nothing). It reports where it removed anything (StrippedHeader, StrippedQuery), none
// (0) when the request holds no copy; it allocates nothing then.
func StripKeyCopies(r *http.Request, key string) Stripped {
	if key == "" {
		return 0
	}
	var stripped Stripped
	for name, values := range r.Header {
		if holdsKey(name, key) || anyHoldsKey(values, key) {
			delete(r.Header, name)
			stripped |= StrippedHeader
		}
	}
	if r.URL != nil && PathHoldsKey(r.URL, key) {
		// No endpoint takes a key in its path (a client whose base URL holds its key): the
		// request goes on to be answered 404, and neither it nor its log entry holds the key.
		r.URL.Path, r.URL.RawPath = KeyRemovedPath, ""
		r.RequestURI = r.URL.RequestURI()
		stripped |= StrippedPath
	}
	if r.URL != nil && holdsKey(r.URL.RawQuery, key) {
		r.URL.RawQuery, r.URL.ForceQuery = withoutPairsHolding(r.URL.RawQuery, key), false
		r.RequestURI = r.URL.RequestURI()
		r.Form, r.PostForm = nil, nil
		stripped |= StrippedQuery
	} else if r.URL != nil && holdsKey(r.RequestURI, key) {
		r.RequestURI = r.URL.RequestURI() // a copy that still differs (see Strip)
		stripped |= StrippedQuery
	}
	return stripped
}

// KeyRemovedPath is the path of a request whose path held a copy of the caller's key.
const KeyRemovedPath = "/mediagw-key-removed"

// PathHoldsKey reports whether u's path (decoded or as sent) holds key (see holdsKey).
func PathHoldsKey(u *url.URL, key string) bool {
	return key != "" && (holdsKey(u.Path, key) || holdsKey(u.RawPath, key))
}

func anyHoldsKey(values []string, key string) bool {
	for _, v := range values {
		if holdsKey(v, key) || basicHoldsKey(v, key) {
			return true
		}
	}
	return false
}

// basicHoldsKey reports whether v is HTTP Basic credentials (under any header name) whose
// base64 user:password holds key.
func basicHoldsKey(v, key string) bool {
	const scheme = "basic "
	// Base64 is longer than what it encodes: credentials shorter than the key are not decoded.
	if len(v) < len(scheme)+len(key) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return false
	}
	decoded, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v[len(scheme):]))
	return err == nil && holdsKey(string(decoded), key)
}

// withoutPairsHolding is rawQuery without the pairs that hold key (holdsKey), the others kept.
func withoutPairsHolding(rawQuery, key string) string {
	pairs := splitQuery(rawQuery)
	kept := pairs[:0]
	for _, pair := range pairs {
		if !holdsKey(pair, key) {
			kept = append(kept, pair)
		}
	}
	return strings.Join(kept, "&")
}

// holdsKey reports whether s holds key as it is, or with any of its bytes percent-encoded (in
// either case of hex digit), as a URL's decoder would read it back.
func holdsKey(s, key string) bool {
	if len(s) < len(key) {
		return false // most header names and values: a percent-encoded copy is longer still
	}
	if strings.Contains(s, key) {
		return true
	}
	return strings.IndexByte(s, '%') >= 0 && percent.Contains(s, key)
}
