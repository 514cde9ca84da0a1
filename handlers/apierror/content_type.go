package apierror

import (
	"errors"
	"mime"
	"net/http"
	"strings"
)

// maxShownMediaType bounds the media type a content-type error repeats back to the client.
const maxShownMediaType = 64

// maxShownCharset bounds the charset a content-type error repeats back to the client.
const maxShownCharset = 32

// UTF8Charset reports whether a media type's parameters (as mime.ParseMediaType returns them)
// name no charset, or UTF-8 ("utf-8" in any letter case, quoted or not; "utf8" is taken as its
// common label). JSON is UTF-8 (RFC 8259): a body read as UTF-8 here but as another charset by
// a provider would say something that was never checked.
func UTF8Charset(params map[string]string) bool {
	charset, named := params["charset"]
	return !named || strings.EqualFold(charset, "utf-8") || strings.EqualFold(charset, "utf8")
}

// WrongContentType is the 400 for a body that an endpoint does not take, with param
// Content-Type. Its message says what the endpoint accepts and what the request declared:
// "Content-Type must be application/json; got text/plain". What it repeats is the media type
// only, without parameters such as a boundary, and cut to 64 bytes ("none" when the header is
// absent, "an unreadable value" when the media type does not parse, "<type> with unreadable
// parameters" when only its parameters do not). A JSON type that names a charset other than
// UTF-8 gets that charset after it and a note that JSON is UTF-8:
// "Content-Type must be application/json; got application/json; charset=latin1 (a JSON body is
// UTF-8: charset may be utf-8 or left out)". A multipart body gets multipartHint after it when
// that is not empty, to say where files go instead.
func WrongContentType(r *http.Request, code, accepted, multipartHint string) *Error {
	received, note := "none", ""
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		shown := mt
		if len(shown) > maxShownMediaType {
			shown = shown[:maxShownMediaType] + "…" // a parsed media type is ASCII: no rune is cut
		}
		switch {
		case err != nil && !(errors.Is(err, mime.ErrInvalidMediaParameter) && mt != ""):
			received = "an unreadable value"
		case err != nil && isJSONType(mt):
			received = shown + " with unreadable parameters" // which charset is unclear
		case err == nil && isJSONType(mt) && !UTF8Charset(params):
			received = shown + shownCharset(params["charset"])
			note = "a JSON body is UTF-8: charset may be utf-8 or left out"
		default:
			received = shown
		}
	}
	msg := "Content-Type must be " + accepted + "; got " + received
	switch {
	case note != "":
		msg += " (" + note + ")"
	case multipartHint != "" && strings.HasPrefix(received, "multipart/"):
		msg += " (" + multipartHint + ")"
	}
	return New(http.StatusBadRequest, code, msg).WithParam("Content-Type")
}

// isJSONType reports whether a parsed (lowercase) media type is JSON: application/json or a
// +json type.
func isJSONType(mt string) bool {
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// shownCharset is how an error repeats a charset: "; charset=" and the charset lowercase, when
// it is a plain token of at most 32 bytes (letters, digits, - _ . : +); else " with an
// unreadable charset".
func shownCharset(charset string) string {
	const unreadable = " with an unreadable charset"
	if charset == "" || len(charset) > maxShownCharset {
		return unreadable
	}
	for _, c := range charset {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:+", c)
		if !ok {
			return unreadable
		}
	}
	return "; charset=" + strings.ToLower(charset)
}
