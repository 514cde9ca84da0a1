package caddymodule

import (
	"github.com/mediagw/mediagw/internal/hdr"
	"mime"
	"net/http"
	"strings"
)

// plainText is the Content-Type a pass-through answer of active content is given.
const plainText = "text/plain; charset=utf-8"

// typedSafely makes a pass-through answer's headers (h) safe for a browser on the gateway's
// origin: X-Content-Type-Options: nosniff on every answer, and text/plain for one the provider
// typed as active content (activeType: HTML, SVG or any XML, JavaScript) or with a type that does
// not parse, its body passed on as sent. No model API answers with a page; a hostile provider
// could, and the client's browser would run it as the gateway's.
//
// own is storage of this answer's for the nosniff value (the attempt's, allocated with it): a
// value shared between answers could be changed in place (a header_down replacement does).
func typedSafely(h http.Header, own *[1]string) {
	own[0] = "nosniff"
	h["X-Content-Type-Options"] = own[:] // the names canonical: no Set, Get (hdr)
	ct := hdr.Get(h, "Content-Type")
	switch ct {
	case "", "application/json", "application/json; charset=utf-8", "text/event-stream",
		"text/event-stream; charset=utf-8", plainText:
		return // the usual answers, spared the parse (which allocates a map of parameters)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || activeType(mt) {
		h["Content-Type"] = []string{plainText}
	}
}

// activeType reports whether a media type (lower case, as mime.ParseMediaType gives it) is one a
// browser renders as a document or runs as a script.
func activeType(mt string) bool {
	switch mt {
	case "text/html", "text/xml", "application/xml", "text/xsl":
		return true
	}
	return strings.HasSuffix(mt, "+xml") || strings.Contains(mt, "javascript") || strings.Contains(mt, "ecmascript")
}
