package passthrough

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
)

// Google's APIs, the Gemini API among them, take system parameters on every call, in the query
// (name or $name, %24name encoded) or as headers (docs.cloud.google.com/apis/docs/system-
// parameters). Some change what the provider reads or what its answer shows the gateway, and are
// refused; the others pass, each for the reason given with it:
//
//   - $ct overrides the Content-Type: refused on every call, as a JSON Content-Type naming
//     another charset than UTF-8 is (the provider would read a body the gateway did not check).
//   - $httpMethod overrides the method, as X-HTTP-Method-Override does: refused on every call
//     (errMethodOverride).
//   - fields, $fields and the X-Goog-FieldMask header filter the answer: refused on a call the
//     gateway charges, whose answer's usage it reads (a mask that leaves out thoughtsTokenCount
//     hides the thinking Google bills). A call on an existing object (a retrieve), which charges
//     nothing or settles at its estimate what its answer does not show, may carry one.
//   - alt and $alt choose the answer's format: on a charged call json and sse (JSON streams),
//     the formats whose usage the gateway reads, once; proto and media are refused.
//   - callback and $callback wrap the answer in a JSONP script: refused on a charged call.
//   - $.xgafv (the error format), prettyPrint (white space) and quotaUser (which of the
//     operator's users a quota counts) pass: they change neither what is made nor the usage
//     an answer reports. key, access_token and the other credentials are removed (see auth).

var (
	errContentTypeOverride = apierror.New(http.StatusBadRequest, "invalid_request_body",
		"the Content-Type may not be overridden with the $ct query parameter: send it as the Content-Type header").WithParam("$ct")
	errFieldMask = apierror.New(http.StatusBadRequest, "invalid_request_body",
		"a response field mask (X-Goog-FieldMask, fields, $fields) may not be sent on a call that is charged: the gateway charges the usage its answer reports, which a mask can leave out")
	errAnswerFormat = apierror.New(http.StatusBadRequest, "invalid_request_body",
		"alt may only be json or sse, once, on a call that is charged: the gateway reads the usage of JSON answers")
	errJSONP = apierror.New(http.StatusBadRequest, "invalid_request_body",
		"JSONP (callback, $callback) is not served on a call that is charged: the gateway reads the usage of JSON answers")
)

// checkSystemParams refuses the system parameters of r's query that Google's APIs would read
// otherwise than the gateway checked (see above); charged is set for a call that is charged
// (Route.Billable). A field mask header is refused by Route with the method override headers
// (overrides).
func checkSystemParams(rawQuery string, charged bool) error {
	alts := 0
	for pair := range strings.FieldsFuncSeq(rawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, _ := strings.Cut(pair, "=")
		if d, err := url.QueryUnescape(k); err == nil {
			k = d
		}
		switch name := strings.TrimSpace(k); strings.ToLower(name) {
		case "$ct":
			return errContentTypeOverride
		case "$httpmethod":
			return errMethodOverride.WithParam(name)
		case "fields", "$fields":
			if charged {
				return errFieldMask.WithParam(name)
			}
		case "callback", "$callback":
			if charged {
				return errJSONP.WithParam(name)
			}
		case "alt", "$alt":
			if d, err := url.QueryUnescape(v); err == nil {
				v = d
			}
			if alts++; charged && (alts > 1 || !strings.EqualFold(v, "json") && !strings.EqualFold(v, "sse")) {
				return errAnswerFormat.WithParam(name)
			}
		}
	}
	return nil
}

// overrides reports whether r asks an upstream to take it for another method (a method override
// header: X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override; any case, '_' or '.' for
// '-'), and whether it sends Google's response field mask header (X-Goog-FieldMask, so spelled).
// The headers are looked through once.
func overrides(h http.Header) (method, fieldMask bool) {
	for name := range h {
		if len(name) < len("X-HTTP-Method") || name[0]|0x20 != 'x' {
			continue // most headers, without folding them
		}
		switch auth.FoldName(name) {
		case "xhttpmethodoverride", "xhttpmethod", "xmethodoverride":
			method = true
		case "xgoogfieldmask":
			fieldMask = true
		}
	}
	return method, fieldMask
}
