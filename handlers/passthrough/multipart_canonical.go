package passthrough

import (
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
	"unicode/utf8"
)

// A multipart body is forwarded re-encoded, never as the client sent it.
//
// Multipart parsers disagree about where a part ends: Go's reader (which the gateway checks
// with) takes a delimiter line with trailing spaces for a delimiter, and reads a body whose first
// delimiter line ends in a bare LF in LF mode; Python's email and cgi modules, Werkzeug and
// busboy accept bare LF line endings anywhere. So the same bytes can hold one model for the
// gateway and another, or a field the gateway never saw, for the provider. Refusing every body
// that is not already canonical would refuse what common clients send (an epilogue, header
// order, quoting styles); re-encoding does not. The gateway therefore writes a new body from the
// parts as it read them, in one canonical form that every parser reads alike:
//
//   - a boundary the gateway chooses (60 random hex digits), which the client cannot know and so
//     cannot put in a part's content;
//   - CRLF line endings, no preamble, no epilogue, no padding after a delimiter;
//   - per part, only `Content-Disposition: form-data; name="…"` (with `; filename="…"` for a
//     file) and, when the client sent one, the part's `Content-Type` in canonical form. Other
//     part headers are dropped.
//
// Parsers disagree too about what is a file: Go's form reader takes a part whose filename is
// empty (filename="") for a text field, Python's and Node's for a file. The gateway reads every
// part one way (see partIsFile): a file has a filename that is not empty, given plainly or as
// filename*; any other part is a text field, checked as one, and written without a filename,
// so that every parser reads it as that text field.
//
// The content of each part is copied as it was read. A name or filename that cannot be written
// plainly in quotes (a quote, a backslash, a control character, invalid UTF-8) is refused, as is
// a part with a Content-Transfer-Encoding other than 7bit, 8bit or binary (its meaning would be
// lost), a part that is not form-data with a name, and a part with two Content-Type headers.
// The spool keeps the canonical body, so a failover replays it byte for byte.

// canonicalPartHeader returns the header to write for a part, from the part's own, its name,
// and whether it is a file (see partIsFile).
func canonicalPartHeader(h textproto.MIMEHeader) (out textproto.MIMEHeader, name string, file bool, err error) {
	cds := h["Content-Disposition"]
	if len(cds) != 1 {
		return nil, "", false, multipartError("every multipart part needs one Content-Disposition header").WithParam("")
	}
	disposition, params, err := mime.ParseMediaType(cds[0])
	if err != nil || disposition != "form-data" || params["name"] == "" {
		return nil, "", false, multipartError("every multipart part must be form-data with a name (Content-Disposition: form-data; name=\"…\")").WithParam("")
	}
	name, filename := params["name"], params["filename"]
	file = partIsFile(params)
	if !plainParam(name) || file && !plainParam(filename) {
		return nil, "", false, multipartError("a multipart part's name or filename may hold no quote, backslash or control character, and must be UTF-8").WithParam("")
	}
	if !plainTransferEncoding(h) {
		return nil, "", false, multipartError("the multipart part " + name + " may not have a Content-Transfer-Encoding; send its content as it is").WithParam(name)
	}
	out = textproto.MIMEHeader{}
	cd := `form-data; name="` + name + `"`
	if file {
		cd += `; filename="` + filename + `"`
	}
	out.Set("Content-Disposition", cd)
	switch types := h["Content-Type"]; len(types) {
	case 0:
	case 1:
		mt, tparams, err := mime.ParseMediaType(types[0])
		canonical := ""
		if err == nil {
			canonical = mime.FormatMediaType(mt, tparams)
		}
		if canonical == "" {
			return nil, "", false, multipartError("the multipart part " + name + " has a malformed Content-Type").WithParam(name)
		}
		out.Set("Content-Type", canonical)
	default:
		return nil, "", false, multipartError("the multipart part " + name + " has more than one Content-Type header").WithParam(name)
	}
	return out, name, file, nil
}

// partIsFile reports whether a part whose Content-Disposition parameters are params is a file:
// its filename (plain or filename*, as mime.ParseMediaType decodes them) is not empty. Every
// common form reader takes such a part for a file; a part with filename="" is a text field to
// Go's (mime/multipart's ReadForm, net/http's FormValue), so the gateway reads it as one.
func partIsFile(params map[string]string) bool { return params["filename"] != "" }

// plainParam reports whether a name or filename can be written between quotes as it is, and
// read back the same by every parser: UTF-8 without quotes, backslashes or control characters.
func plainParam(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r == '"' || r == '\\' || r < ' ' || r == 0x7f })
}

// canonicalForm writes the canonical body (see above) to the spool. With digest set it also
// digests the parts as written (formDigest), which the gateway's boundary, drawn anew for each
// request, is no part of.
type canonicalForm struct {
	mw     *multipart.Writer
	digest *formDigest
}

func newCanonicalForm(w io.Writer) *canonicalForm { return &canonicalForm{mw: multipart.NewWriter(w)} }

// part starts a part with the given canonical header and returns where its content goes.
func (c *canonicalForm) part(h textproto.MIMEHeader) (io.Writer, error) {
	pw, err := c.mw.CreatePart(h)
	if err != nil || c.digest == nil {
		return pw, err
	}
	return io.MultiWriter(pw, c.digest.part(h)), nil
}

// close writes the closing delimiter.
func (c *canonicalForm) close() error {
	if c.digest != nil {
		c.digest.end()
	}
	return c.mw.Close()
}

// contentType is the request's new Content-Type, with the gateway's boundary.
func (c *canonicalForm) contentType() string { return c.mw.FormDataContentType() }
