package videotask

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// marshalAnswer encodes a query answer exactly as apierror.Marshal does (keys sorted, values
// compacted, no HTML escaping), without reflection: the watcher encodes one for every task it
// finds changed. Answers with a key that would need escaping, or a value that is not valid
// JSON, go through apierror.Marshal, which escapes the one and reports the other.
func marshalAnswer(m map[string]json.RawMessage) ([]byte, error) {
	keys := make([]string, 0, len(m))
	size := 2
	for k, v := range m {
		if !plainKey(k) || v != nil && len(v) == 0 {
			return apierror.Marshal(m)
		}
		keys = append(keys, k)
		size += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('"')
		buf.WriteString(k)
		buf.WriteString(`":`)
		v := m[k]
		if v == nil {
			buf.WriteString("null") // as json.RawMessage encodes a nil value
			continue
		}
		if json.Compact(buf, v) != nil {
			return apierror.Marshal(m)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// plainKey reports whether encoding/json writes k between quotes as it is: printable ASCII
// without a quote or a backslash.
func plainKey(k string) bool {
	for i := range len(k) {
		if c := k[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// quoted is json.Marshal(s) (HTML characters escaped, as mustJSON writes them), without the
// encoder for the usual plain strings (ids, model names).
func quoted(s string) json.RawMessage {
	if needsEscape(s) {
		return mustJSON(s)
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// quotedLike is quoted(s), or raw itself (not copied) when it is exactly that already: the
// upstream's answer names the task as the record does.
func quotedLike(raw json.RawMessage, s string) json.RawMessage {
	if len(raw) == len(s)+2 && raw[0] == '"' && raw[len(raw)-1] == '"' && string(raw[1:len(raw)-1]) == s && !needsEscape(s) {
		return raw
	}
	return quoted(s)
}

// needsEscape reports whether json.Marshal (HTML characters escaped) writes s other than as
// it is between quotes.
func needsEscape(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return true
		}
	}
	return false
}

// unquoted decodes a JSON string as json.Unmarshal into a string does, without the decoder for
// a plain string (no escape, printable ASCII). Anything else that is not a string is "".
func unquoted(raw json.RawMessage) string {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		inner := raw[1 : n-1]
		if plainKey(string(inner)) {
			return string(inner)
		}
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
