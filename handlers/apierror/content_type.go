package apierror

import (
	"errors"
	"mime"
	"net/http"
	"strings"
)

// maxShownMediaType bounds the media type a content-type error repeats back to the client.
const maxShownMediaType = 64

// WrongContentType is the 400 for a body that an endpoint does not take, with param
// Content-Type. Its message says what the endpoint accepts and what the request declared:
// "Content-Type must be application/json; got text/plain". What it repeats is the media type
// only, without parameters such as a boundary (also when they do not parse), and cut to 64 bytes
// ("none" when the header is absent, "an unreadable value" when the media type does not parse). A multipart body gets multipartHint
// after it when that is not empty, to say where files go instead.
func WrongContentType(r *http.Request, code, accepted, multipartHint string) *Error {
	received := "none"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case err != nil && !(errors.Is(err, mime.ErrInvalidMediaParameter) && mt != ""):
			received = "an unreadable value"
		case len(mt) > maxShownMediaType:
			received = mt[:maxShownMediaType] + "…" // a parsed media type is ASCII: no rune is cut
		default:
			received = mt
		}
	}
	msg := "Content-Type must be " + accepted + "; got " + received
	if multipartHint != "" && strings.HasPrefix(received, "multipart/") {
		msg += " (" + multipartHint + ")"
	}
	return New(http.StatusBadRequest, code, msg).WithParam("Content-Type")
}
