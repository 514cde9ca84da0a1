package providers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// ReplaceModel returns body with the value of every top-level "model" string member replaced by
// model. Nothing else changes: the other bytes, the member order and the white space stay as they
// were, so what was checked is what is sent. ok is false when body is not a JSON object with a
// top-level string "model".
func ReplaceModel(body []byte, model string) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return body, false
	}
	type span struct{ start, end int64 }
	var spans []span
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return body, false
		}
		if key != "model" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return body, false
			}
			continue
		}
		start := dec.InputOffset()
		for start < int64(len(body)) && (body[start] == ':' || isSpace(body[start])) {
			start++
		}
		val, err := dec.Token()
		if err != nil {
			return body, false
		}
		if _, isString := val.(string); !isString {
			return body, false
		}
		spans = append(spans, span{start, dec.InputOffset()})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') || len(spans) == 0 {
		return body, false
	}
	for _, c := range body[dec.InputOffset():] {
		if !isSpace(c) {
			return body, false // more than one JSON value
		}
	}
	quoted, err := json.Marshal(model)
	if err != nil {
		return body, false
	}
	out := make([]byte, 0, len(body)+len(spans)*len(quoted))
	var last int64
	for _, s := range spans {
		out = append(out, body[last:s.start]...)
		out = append(out, quoted...)
		last = s.end
	}
	return append(out, body[last:]...), true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// ModelRewriter shows the client's model ids (AnswerModels.Show) in every JSON object of the
// "data:" lines of a server-sent event stream as it passes, line by line, so events still flow
// as they come.
type ModelRewriter struct {
	src     *bufio.Reader
	closer  io.Closer
	models  AnswerModels
	pending []byte
	err     error
}

// NewModelRewriter wraps an event stream.
func NewModelRewriter(body io.ReadCloser, models AnswerModels) *ModelRewriter {
	return &ModelRewriter{src: bufio.NewReaderSize(body, 16<<10), closer: body, models: models}
}

func (m *ModelRewriter) Read(p []byte) (int, error) {
	for len(m.pending) == 0 {
		if m.err != nil {
			return 0, m.err
		}
		line, err := m.src.ReadBytes('\n')
		m.err = err
		m.pending = m.rewriteLine(line)
	}
	n := copy(p, m.pending)
	m.pending = m.pending[n:]
	return n, nil
}

func (m *ModelRewriter) rewriteLine(line []byte) []byte {
	rest, isData := bytes.CutPrefix(line, []byte("data:"))
	if !isData {
		return line
	}
	payload := bytes.TrimLeft(rest, " ")
	end := bytes.TrimRight(payload, "\r\n")
	if len(end) == 0 || end[0] != '{' {
		return line
	}
	replaced, ok := m.models.Show(end)
	if !ok {
		return line
	}
	out := make([]byte, 0, len(line)+len(replaced)-len(end))
	out = append(out, line[:len(line)-len(payload)]...)
	out = append(out, replaced...)
	return append(out, payload[len(end):]...)
}

// Close closes the stream.
func (m *ModelRewriter) Close() error { return m.closer.Close() }
