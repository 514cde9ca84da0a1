package passthrough

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// mediaType parses a Content-Type value as mime.ParseMediaType does. The common plain
// "application/json" is answered without parsing (and without allocating).
func mediaType(contentType string) (string, map[string]string, error) {
	if contentType == "application/json" {
		return contentType, nil, nil
	}
	return mime.ParseMediaType(contentType)
}

// utf8JSON reports whether a JSON Content-Type names no charset or UTF-8 (any other type is
// left to the endpoint). The body is checked as UTF-8; an upstream that honours another charset
// (UTF-7 reads "+ACI-" inside a string as a quote) would read members that were never checked.
func utf8JSON(contentType string) bool {
	if contentType == "application/json" || !mentionsJSON(contentType) {
		return true // the usual header, and the types that are not JSON, without parsing
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return true
	}
	if err != nil {
		return false // a JSON type whose parameters do not parse: which charset is unclear
	}
	return apierror.UTF8Charset(params)
}

// notUTF8 is the 400 for a JSON body in another charset than UTF-8 (see utf8JSON): the wrong
// Content-Type error the gateway's own JSON endpoints give, naming the declared JSON type as the
// one accepted.
func notUTF8(r *http.Request) error {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return apierror.WrongContentType(r, "invalid_request_body", mt, "")
}

// mentionsJSON reports whether s holds "json" in any letter case (media types are
// case-insensitive).
func mentionsJSON(s string) bool {
	for i := 0; i+4 <= len(s); i++ {
		if s[i]|0x20 == 'j' && s[i+1]|0x20 == 's' && s[i+2]|0x20 == 'o' && s[i+3]|0x20 == 'n' {
			return true
		}
	}
	return false
}

// queryNames reports whether a raw query has a parameter whose name, decoded, is name in any
// letter case. Pairs are split at '&' and ';', as some servers do; a name that does not decode
// is compared as it is.
func queryNames(rawQuery, name string) bool {
	for pair := range strings.FieldsFuncSeq(rawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		k, _, _ := strings.Cut(pair, "=")
		if d, err := url.QueryUnescape(k); err == nil {
			k = d
		}
		if strings.EqualFold(strings.TrimSpace(k), name) {
			return true
		}
	}
	return false
}

// stringValue decodes a JSON value that must be a string, as json.Unmarshal into a string
// does. A string without escapes, control characters or invalid UTF-8 (nearly every model id) is
// taken as it stands; anything else goes through json.Unmarshal. (It returns the string rather
// than filling a pointer, so that the fast path allocates nothing but the string.)
func stringValue(raw json.RawMessage) (string, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		inner := raw[1 : n-1]
		plain := true
		for _, c := range inner {
			if c < 0x20 || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain && utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// replayedBody is a JSON body read whole for its checks: the request's Body, and through again
// (its GetBody) a new reader of the same bytes for each retry. One allocation where a reader, its
// Close and a GetBody closure took three.
type replayedBody struct {
	bytes.Reader
	body []byte
}

// Close does nothing: the bytes stay readable through again.
func (b *replayedBody) Close() error { return nil }

func (b *replayedBody) again() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(b.body)), nil
}

// encodesSeparator reports whether an escaped path (url.URL's RawPath, set only when it differs
// from the default escaping of the decoded path) holds an encoded '/', '\' or '.', in either
// letter case. No client of the forwarded endpoints encodes them; decoded, they change which
// segments a path has.
func encodesSeparator(rawPath string) bool {
	for i := 0; i+2 < len(rawPath); i++ {
		if rawPath[i] != '%' {
			continue
		}
		switch c := rawPath[i+2] | 0x20; rawPath[i+1] {
		case '2':
			if c == 'f' || c == 'e' {
				return true
			}
		case '5':
			if c == 'c' {
				return true
			}
		}
	}
	return false
}
