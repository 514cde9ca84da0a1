package usage

import "bytes"

// dataLines splits a streamed answer (server-sent events) into lines as it streams by, without
// holding it, and hands a dataReader the bytes of each line that starts with "data:" (after
// it): beginData at the line's start, data for its bytes, which may come in several pieces,
// and endData at its end. Lines end with CR, LF or CRLF, as the SSE format allows. An event is
// read as a client reads it: a data line that holds no whole JSON value yet (see
// dataReader.complete) goes on in the event's next data line, after a line feed, as a client
// joins an event's data lines (OpenAI sends every event on one line, but nothing in the format
// keeps a provider to that); endData comes at the line that completes it, or at the event's
// blank line.
type dataLines struct {
	// matched is how many bytes of "data:" the current line started with so far; -1 when it
	// does not start so (the rest of the line is skipped).
	matched int
	inData  bool // past the current line's "data:"
	// open is set when the event's data so far is no whole JSON value: the event's next data
	// line goes on with it.
	open      bool
	lineBytes bool // the current line has a byte
	afterCR   bool // the last line ended with a CR: a LF that comes next is part of that end
}

// dataReader reads the data lines of a stream (see dataLines).
type dataReader interface {
	beginData()
	data(p []byte)
	endData()
	// complete reports whether the data read since beginData is one whole JSON value.
	complete() bool
}

var dataField = []byte("data:")

// lineFeed joins the data lines of one event.
var lineFeed = []byte("\n")

// write reads p, handing r its data lines.
func (d *dataLines) write(p []byte, r dataReader) {
	for len(p) > 0 {
		if d.afterCR && p[0] == '\n' {
			d.afterCR = false
			p = p[1:]
			continue
		}
		d.afterCR = false
		end := bytes.IndexAny(p, "\r\n")
		if end < 0 {
			d.linePart(p, r)
			return
		}
		d.linePart(p[:end], r)
		d.endLine(r)
		d.afterCR = p[end] == '\r'
		p = p[end+1:]
	}
}

// endLine ends the current line: a data line that completes its event's data ends it, and a
// blank line ends an event whose data never did.
func (d *dataLines) endLine(r dataReader) {
	switch {
	case d.inData && r.complete():
		r.endData()
		d.open = false
	case d.inData:
		d.open = true
	case !d.lineBytes && d.open:
		r.endData()
		d.open = false
	}
	d.matched, d.inData, d.lineBytes = 0, false, false
}

// linePart reads the next bytes of the current line.
func (d *dataLines) linePart(b []byte, r dataReader) {
	if len(b) > 0 {
		d.lineBytes = true
	}
	for len(b) > 0 && !d.inData {
		if d.matched < 0 {
			return
		}
		if b[0] != dataField[d.matched] {
			d.matched = -1
			return
		}
		d.matched++
		b = b[1:]
		if d.matched == len(dataField) {
			d.inData = true
			if d.open {
				r.data(lineFeed) // the event's data goes on
			} else {
				r.beginData()
			}
		}
	}
	if d.inData {
		r.data(b)
	}
}
