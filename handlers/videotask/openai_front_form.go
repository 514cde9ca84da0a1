package videotask

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/bounded"
)

// maxFormParts bounds the parts of a multipart create body: a real one has at most six.
const maxFormParts = 16

// errFormBody answers a multipart body that cannot be read as one.
var errFormBody = apierror.New(http.StatusBadRequest, "invalid_request_body", "the multipart/form-data body is malformed")

// bodyTypeError is the refusal of a create body that is neither JSON nor a readable form: a
// form without a boundary is told that, any other type the types this endpoint takes.
func bodyTypeError(r *http.Request) *apierror.Error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "multipart/form-data" {
		return apierror.ErrNoBoundary
	}
	return apierror.WrongContentType(r, "invalid_request_body", "application/json or multipart/form-data", "")
}

// formBoundary returns the boundary of a multipart/form-data request, and whether it is one.
func formBoundary(r *http.Request) (string, bool) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return "", false
	}
	return params["boundary"], true
}

// ReadVideoForm reads a multipart/form-data create body, as the OpenAI SDKs send one even
// without a file: text parts named as the JSON members, input_reference given as a URL or as
// input_reference[image_url]. A file part, or input_reference[file_id], is errPresign, answered
// before the file is read; a repeated or unknown part is refused, a repeated one even when an
// earlier copy was empty (another decoder may take that one). At most limit bytes are read
// (past them the error is apierror.ErrTooLarge).
func ReadVideoForm(body io.Reader, boundary string, limit int64) (VideoRequest, error) {
	var v VideoRequest
	err := eachFormPart(body, boundary, limit, func(name string, value []byte) (bool, error) {
		switch name {
		case "input_reference[image_url]":
			name = "input_reference"
		case "input_reference[file_id]":
			return false, errPresign
		}
		field := v.textField(name)
		if field == nil {
			return false, frontInvalid(name, "is not a parameter of this endpoint (accepted: %s)", strings.Join(videoFields, ", "))
		}
		if v.given[name] {
			return false, frontInvalid(name, "is given more than once")
		}
		if !utf8.Valid(value) {
			return false, apierror.NotUTF8("invalid_request_body")
		}
		v.give(name, string(value))
		if *field == "" && name == "model" {
			return false, errMissingModel
		}
		return true, nil
	})
	return v, err
}

// formModel reads the parts of a multipart create body up to its model part, and returns the
// model ("" when a file part, the end or an error comes first). Everything it read is in read,
// so that the body can be given on whole (io.MultiReader(read, rest)).
func formModel(body io.Reader, boundary string, limit int64, read *bytes.Buffer) string {
	model := ""
	// Its error is the reading of the whole form's, which reads the body again.
	_ = eachFormPart(io.TeeReader(body, read), boundary, limit, func(name string, value []byte) (bool, error) {
		if name == "model" {
			model = string(value)
			return false, nil
		}
		return true, nil
	})
	return model
}

// eachFormPart calls part with the name and value of each text part of a multipart body, in
// order, until it returns false or an error. A file part (one with a filename) is errPresign.
func eachFormPart(body io.Reader, boundary string, limit int64, part func(name string, value []byte) (bool, error)) error {
	form := &bounded.Reader{R: body, Left: limit, TooLarge: apierror.ErrTooLarge}
	mr := multipart.NewReader(form, boundary)
	for n := 0; ; n++ {
		p, err := mr.NextRawPart()
		// Only a bare io.EOF is the end of a form (its closing boundary); NextRawPart wraps the
		// io.EOF of a body without a single boundary line, which is no form.
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return tooLargeOr(form, errFormBody)
		}
		if n == maxFormParts {
			return apierror.New(http.StatusBadRequest, "invalid_request_body", "the form has too many parts")
		}
		if p.FileName() != "" {
			return errPresign
		}
		value, err := io.ReadAll(p)
		if err != nil {
			return tooLargeOr(form, errFormBody)
		}
		more, err := part(p.FormName(), value)
		if err != nil || !more {
			return err
		}
	}
}

// tooLargeOr is the error of a failed read of the form: ErrTooLarge when the body was found
// longer than its bound, else otherwise.
func tooLargeOr(b *bounded.Reader, otherwise error) error {
	if b.Exceeded() {
		return apierror.ErrTooLarge
	}
	return otherwise
}
