package auth

import (
	"net/http"
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

func anyHoldsKey(values []string, key string) bool {
	for _, v := range values {
		if holdsKey(v, key) {
			return true
		}
	}
	return false
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
	if strings.Contains(s, key) {
		return true
	}
	return strings.IndexByte(s, '%') >= 0 && percent.Contains(s, key)
}
