// Package hdr reads and removes HTTP header fields under names already in canonical form
// ("Content-Type", as textproto.CanonicalMIMEHeaderKey writes them), without canonicalizing the
// name again on every call as http.Header's methods do. Headers that net/http parsed, and those
// set through http.Header's methods, are keyed so; the request path calls these for every
// request, where the canonicalization was a measurable share of the gateway's work.
package hdr

import "net/http"

// Get returns the first value of the canonical name in h, or "" (http.Header.Get).
func Get(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Del removes the canonical name from h (http.Header.Del).
func Del(h http.Header, name string) {
	delete(h, name)
}
