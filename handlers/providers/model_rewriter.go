package providers

import (
	"bufio"
	"bytes"
	"io"
)

// MaxRewrittenEvent bounds the bytes of one event that ModelRewriter holds to show the client's
// model ids in it. An event that grows past it (no line end, or no blank line, in that many
// bytes) is passed on as it comes, unchanged, up to its end.
const MaxRewrittenEvent = 32 << 20

// ModelRewriter shows the client's model ids (AnswerModels.Show) in the JSON data of each event
// of a server-sent event stream as it passes. An event's data is what a client reads: its data
// lines joined with a line feed, so a JSON object sent over several data lines is shown as the
// client's too. Lines end at LF, CRLF or CR, as the standard reads them. Each event goes on
// whole at its end (its blank line); lines outside an event's data go on as they come.
type ModelRewriter struct {
	src    *bufio.Reader
	closer io.Closer
	models AnswerModels

	event   []byte // the current event, from its first data line, held until its blank line
	data    int    // the data lines in event
	passing bool   // the event outgrew MaxRewrittenEvent: the rest of it goes on as it comes
	afterCR bool   // the last line ended with a CR: a LF that follows ends that line
	midLine bool   // the last piece read was not a whole line
	limit   int    // MaxRewrittenEvent
	line    []byte // the line being read
	pending []byte
	err     error
}

// NewModelRewriter wraps an event stream.
func NewModelRewriter(body io.ReadCloser, models AnswerModels) *ModelRewriter {
	return &ModelRewriter{src: bufio.NewReaderSize(body, 16<<10), closer: body, models: models, limit: MaxRewrittenEvent}
}

func (m *ModelRewriter) Read(p []byte) (int, error) {
	for len(m.pending) == 0 {
		if m.err != nil {
			return 0, m.err
		}
		m.next()
	}
	n := copy(p, m.pending)
	m.pending = m.pending[n:]
	return n, nil
}

// Close closes the stream.
func (m *ModelRewriter) Close() error { return m.closer.Close() }

// next reads the stream's next line, or a piece of it, and puts what may go on in pending.
func (m *ModelRewriter) next() {
	line, whole, err := m.readLine()
	m.err = err
	atStart := !m.midLine
	if len(line) > 0 {
		m.midLine = !whole
	}
	switch {
	case len(line) == 0:
	case m.afterCR && atStart && len(line) == 1 && line[0] == '\n':
		// The LF of a CRLF whose CR ended the line before: part of that line's end.
		m.afterCR = false
		m.add(line)
		return
	case m.passing:
		m.pending = append(m.pending, line...)
		if whole && atStart && isBlank(line) {
			m.passing = false // the event that outgrew the bound ended
		}
	default:
		m.line = append(m.line, line...)
		if whole {
			m.endLine()
		}
	}
	if len(line) > 0 {
		m.afterCR = whole && line[len(line)-1] == '\r'
	}
	if !m.passing && len(m.event)+len(m.line) > m.limit {
		// Too long to hold: what was held goes on unchanged, and the rest of the event as it
		// comes.
		m.pending = append(append(m.pending, m.event...), m.line...)
		m.event, m.line, m.data, m.passing = m.event[:0], nil, 0, true
	}
	if err != nil && !m.passing {
		// The stream's end: a last line without its end is one too, and the event cut short
		// goes on.
		if len(m.line) > 0 {
			m.endLine()
		}
		m.pending = append(m.pending, m.shown()...)
		m.event, m.data = nil, 0
	}
}

// endLine takes the line just read whole (m.line): a blank one ends the event, a data line
// begins or continues it, any other goes on at once unless an event is held.
func (m *ModelRewriter) endLine() {
	line := m.line
	m.line = nil
	switch {
	case isBlank(line):
		m.pending = append(m.pending, m.shown()...)
		m.pending = append(m.pending, line...)
		m.event, m.data = m.event[:0], 0
	case bytes.HasPrefix(line, dataField):
		m.event = append(m.event, line...)
		m.data++
	case len(m.event) > 0:
		m.event = append(m.event, line...)
	default:
		m.pending = append(m.pending, line...)
	}
}

// add puts b after what was read: with the held event, or to go on.
func (m *ModelRewriter) add(b []byte) {
	if len(m.event) > 0 && !m.passing {
		m.event = append(m.event, b...)
		return
	}
	m.pending = append(m.pending, b...)
}

// readLine reads the stream up to a line's end (LF, CRLF or CR; the LF of a CRLF split across
// reads comes as a line of its own, see afterCR), or what the reader's buffer holds of a longer
// line (whole false). The bytes are the reader's: copy them before the next read.
func (m *ModelRewriter) readLine() (line []byte, whole bool, err error) {
	if m.src.Buffered() == 0 {
		if _, err := m.src.Peek(1); err != nil {
			return nil, false, err
		}
	}
	buf, _ := m.src.Peek(m.src.Buffered())
	i := bytes.IndexAny(buf, "\r\n")
	if i < 0 {
		_, _ = m.src.Discard(len(buf))
		return buf, false, nil
	}
	end := i + 1
	if buf[i] == '\r' && end < len(buf) && buf[end] == '\n' {
		end++
	}
	_, _ = m.src.Discard(end)
	return buf[:end], true, nil
}

var dataField = []byte("data:")

// isBlank reports whether line is a line end alone: the end of an event.
func isBlank(line []byte) bool {
	return len(bytes.TrimRight(line, "\r\n")) == 0
}

// shown is the held event with the client's model ids shown in its data (the data lines' values,
// each without "data:" and one space, joined with a line feed), as many data lines as before,
// each piece of the shown data on its line. An event whose data is not one JSON object, or shows
// nothing, is as it came.
func (m *ModelRewriter) shown() []byte {
	if m.data == 0 {
		return m.event
	}
	type piece struct{ start, end int } // a data line's value in event
	pieces := make([]piece, 0, m.data)
	var joined []byte
	for pos := 0; pos < len(m.event); {
		end := len(m.event) // held lines are whole: this is a last resort
		if i := bytes.IndexAny(m.event[pos:], "\r\n"); i >= 0 {
			end = pos + i
		}
		next := min(end+1, len(m.event))
		if end < len(m.event) && m.event[end] == '\r' && next < len(m.event) && m.event[next] == '\n' {
			next++
		}
		if value, ok := bytes.CutPrefix(m.event[pos:end], dataField); ok {
			start := end - len(value)
			if len(value) > 0 && value[0] == ' ' {
				start++
			}
			if len(pieces) > 0 {
				joined = append(joined, '\n')
			}
			joined = append(joined, m.event[start:end]...)
			pieces = append(pieces, piece{start, end})
		}
		pos = next
	}
	if t := bytes.TrimLeft(joined, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return m.event
	}
	shown, ok := m.models.Show(joined)
	if !ok {
		return m.event
	}
	values := bytes.Split(shown, []byte("\n"))
	if len(values) != len(pieces) {
		return m.event // a shown id holds no line feed (JSON quotes it): this does not happen
	}
	out := make([]byte, 0, len(m.event)+len(shown)-len(joined))
	last := 0
	for i, p := range pieces {
		out = append(append(out, m.event[last:p.start]...), values[i]...)
		last = p.end
	}
	return append(out, m.event[last:]...)
}
