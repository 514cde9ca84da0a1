package console

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"unicode/utf8"

	"github.com/mediagw/mediagw/internal/strictquery"
)

// strictRequest reads the query of a console request, and the form of a POST, strictly, as the
// admin API reads its queries and bodies: a query or form that does not decode (%zz), a field
// given more than once (which copy counts: the browser's, a proxy's, an extension's?) and a name
// or value that is not UTF-8 (which a page would show, and the store keep, as another text) are
// each refused with what is wrong, so that nothing is read as its first copy or as changed text.
// It returns the refusal ("" when the request reads clearly).
func strictRequest(r *http.Request) string {
	q, err := strictquery.Read(r.URL.RawQuery)
	if err != nil {
		return "This address's query does not decode (a % not followed by two hex digits, or a ';'). Follow the console's own links."
	}
	if msg := onceAndText(q, "the address"); msg != "" {
		return msg
	}
	if r.Method != http.MethodPost {
		return ""
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		err = r.ParseMultipartForm(maxForm)
	} else {
		err = r.ParseForm()
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return "This form is larger than the console reads (64 KiB)."
	}
	if err != nil {
		return "This form does not decode. Reload the page and send it again."
	}
	return onceAndText(r.PostForm, "the form")
}

// onceAndText refuses values (where names them) holding a field more than once, or a name or
// value that is not UTF-8.
func onceAndText(values url.Values, where string) string {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names) // the same refusal for the same request
	for _, name := range names {
		if !utf8.ValidString(name) {
			return "A field name in " + where + " is not UTF-8 text."
		}
		if len(values[name]) > 1 {
			return "The field " + name + " is given more than once in " + where + ": give it once."
		}
		if !utf8.ValidString(values[name][0]) {
			return "The field " + name + " in " + where + " is not UTF-8 text."
		}
	}
	return ""
}
