package videotask

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// answerField is one member of a client's answer; answerFields the members of one, sorted by
// name with no name twice.
type answerField struct {
	name  string
	value json.RawMessage
}

type answerFields []answerField

// get returns the value of the member name, or nil.
func (a answerFields) get(name string) json.RawMessage {
	i, found := slices.BinarySearchFunc(a, name, func(f answerField, name string) int { return strings.Compare(f.name, name) })
	if !found {
		return nil
	}
	return a[i].value
}

// asMap is the answer as a map.
func (a answerFields) asMap() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(a))
	for _, f := range a {
		m[f.name] = f.value
	}
	return m
}

// marshalAnswer encodes a query answer exactly as apierror.Marshal does (keys sorted, values
// compacted, no HTML escaping): encodeAnswer of the map's members.
func marshalAnswer(m map[string]json.RawMessage) ([]byte, error) {
	fields := make(answerFields, 0, len(m))
	for k, v := range m {
		fields = append(fields, answerField{k, v})
	}
	fields.sort()
	return encodeAnswer(fields, false)
}

// maxInsertionSort is the most members answerFields.sort sorts by insertion: its time grows
// with the square of their number, and an upstream answer may hold hundreds of thousands.
const maxInsertionSort = 32

// sort sorts the members by name. The usual answer (a dozen members or so, sorted for every task
// the watcher reads) is sorted by insertion, each comparison inline rather than through a
// function value as slices.SortFunc makes it; a larger one (a broken or hostile upstream's) by
// slices.SortFunc, whose time grows as n log n. Names are unique, so the order is the one any
// sort gives.
func (a answerFields) sort() {
	if len(a) > maxInsertionSort {
		slices.SortFunc(a, func(x, y answerField) int { return strings.Compare(x.name, y.name) })
		return
	}
	for i := 1; i < len(a); i++ {
		f := a[i]
		j := i
		for ; j > 0 && a[j-1].name > f.name; j-- {
			a[j] = a[j-1]
		}
		a[j] = f
	}
}

// encodeAnswer encodes a query answer (sorted members) exactly as apierror.Marshal encodes it as
// a map, without reflection: the watcher encodes one for every task it finds changed. Answers
// with a name that would need escaping, or a value that is not valid JSON, go through
// apierror.Marshal, which escapes the one and reports the other. With checked, the caller
// vouches that every value is valid JSON (decoded from a checked document, or written by
// json.Marshal): a value without a white space byte is then written as it is, which is what
// json.Compact would write, without its scan.
func encodeAnswer(fields answerFields, checked bool) ([]byte, error) {
	size := 2
	for _, f := range fields {
		if !plainKey(f.name) || f.value != nil && len(f.value) == 0 {
			return apierror.Marshal(fields.asMap())
		}
		size += len(f.name) + len(f.value) + 4
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('"')
		buf.WriteString(f.name)
		buf.WriteString(`":`)
		if f.value == nil {
			buf.WriteString("null") // as json.RawMessage encodes a nil value
			continue
		}
		if checked && !hasSpace(f.value) {
			buf.Write(f.value)
			continue
		}
		if json.Compact(buf, f.value) != nil {
			return apierror.Marshal(fields.asMap())
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// hasSpace reports whether b holds a byte that JSON takes for white space (inside a string or
// not).
func hasSpace(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			return true
		}
	}
	return false
}

// plainKey reports whether encoding/json writes k between quotes as it is: printable ASCII
// without a quote or a backslash. (So does a JSON string read between its quotes decode to
// itself.)
func plainKey[K ~string | ~[]byte](k K) bool {
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
