package providers

import (
	"bytes"
	"encoding/json"
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
