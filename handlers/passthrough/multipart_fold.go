package passthrough

import (
	"bytes"
	"io"
	"net/http"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// errFoldedHeader is a part header continued on a line that begins with a space or a tab (the
// obsolete line folding of RFC 5322). Go's parser joins such a line to the header above it;
// other parsers treat it as a header of its own or as the start of the body, and so may disagree
// about a part's name.
var errFoldedHeader = apierror.New(http.StatusBadRequest, "invalid_request_body",
	"a multipart part header is folded (a line begins with a space or a tab); send each header on one line")

// maxDelimiterPadding is how much of a delimiter line's trailing whitespace is kept to tell it
// apart from other lines; a longer line that begins with the delimiter and whitespace is taken as
// a delimiter too, which only means more lines are checked.
const maxDelimiterPadding = 64

// foldCheck watches a multipart body as it is read and finds folded part headers. It reads the
// body as lines: a line that begins with "--" and the boundary, followed only by whitespace,
// starts a part's headers, which end at the first empty line; the closing delimiter ends the
// watch. It holds no more than the start of one line, so it streams any body size.
type foldCheck struct {
	delim     []byte // "--" + boundary
	line      []byte // the start of the current line
	long      bool   // the current line is longer than what line keeps
	atStart   bool   // the next byte begins a line
	inHeaders bool
	done      bool
	err       error
}

func newFoldCheck(boundary string) *foldCheck {
	delim := []byte("--" + boundary)
	return &foldCheck{delim: delim, line: make([]byte, 0, len(delim)+maxDelimiterPadding), atStart: true}
}

// Write never changes p; it answers errFoldedHeader once a folded header was seen.
func (f *foldCheck) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !f.done && f.err == nil {
		if f.atStart && f.inHeaders && (p[0] == ' ' || p[0] == '\t') {
			f.err = errFoldedHeader
			break
		}
		f.atStart = false
		end := bytes.IndexByte(p, '\n')
		seg := p
		if end >= 0 {
			seg = p[:end]
		}
		room := cap(f.line) - len(f.line)
		f.line = append(f.line, seg[:min(room, len(seg))]...)
		f.long = f.long || len(seg) > room
		if end < 0 {
			break
		}
		f.endLine()
		p = p[end+1:]
	}
	if f.err != nil {
		return 0, f.err
	}
	return n, nil
}

// endLine decides what the line just read means.
func (f *foldCheck) endLine() {
	line := bytes.TrimSuffix(f.line, []byte("\r"))
	switch {
	case f.inHeaders && len(line) == 0 && !f.long:
		f.inHeaders = false
	case bytes.HasPrefix(line, f.delim):
		rest := line[len(f.delim):]
		if bytes.HasPrefix(rest, []byte("--")) {
			f.done = true // the closing delimiter: what follows is the epilogue
		} else if len(bytes.TrimRight(rest, " \t")) == 0 {
			f.inHeaders = true
		}
	}
	f.line, f.long, f.atStart = f.line[:0], false, true
}

// Interface guards
var _ io.Writer = (*foldCheck)(nil)
