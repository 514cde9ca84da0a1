package usage

import "bytes"

// dataLines splits a streamed answer (server-sent events) into lines as it streams by, without
// holding it, and hands a dataReader the bytes of each line that starts with "data:" (after
// it): beginData at the line's start, data for its bytes, which may come in several pieces,
// and endData at its end. Lines end with CR, LF or CRLF, as the SSE format allows. Each event is
// read as one data line: OpenAI sends every event on one line.
type dataLines struct {
	// matched is how many bytes of "data:" the current line started with so far; -1 when it
	// does not start so (the rest of the line is skipped).
	matched int
	inData  bool // past the current line's "data:"
}

// dataReader reads the data lines of a stream (see dataLines).
type dataReader interface {
	beginData()
	data(p []byte)
	endData()
}

var dataField = []byte("data:")

// write reads p, handing r its data lines.
func (d *dataLines) write(p []byte, r dataReader) {
	for len(p) > 0 {
		end := bytes.IndexAny(p, "\r\n")
		if end < 0 {
			d.linePart(p, r)
			return
		}
		d.linePart(p[:end], r)
		if d.inData {
			r.endData()
		}
		d.matched, d.inData = 0, false
		p = p[end+1:]
	}
}

// linePart reads the next bytes of the current line.
func (d *dataLines) linePart(b []byte, r dataReader) {
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
			r.beginData()
		}
	}
	if d.inData {
		r.data(b)
	}
}
