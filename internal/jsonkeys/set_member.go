package jsonkeys

import (
	"encoding/json"
	"errors"
	"strings"
)

// Errors of SetMember.
var (
	// ErrNoMember is an object without the member, when the edit does not add it.
	ErrNoMember = errors.New("the object has no such member")
	// ErrMemberValue is a member whose current value the edit may not replace.
	ErrMemberValue = errors.New("the member's value is not one the edit replaces")
)

// MemberEdit says what SetMember does besides replacing the values it finds.
type MemberEdit struct {
	// Add adds the member as the object's last when the object has none; without it such an
	// object is ErrNoMember.
	Add bool
	// Replaces, when not nil, says whether a current value (as written, white space around it
	// left out) may be replaced: one it refuses is ErrMemberValue.
	Replaces func(old []byte) bool
}

// SetMember returns the JSON object data with the value of each of its top-level members named
// key (the key's escapes decoded, its letter case exact) made value, or, when it has none and
// edit.Add is set, with "key":value added as its last member. Every other byte stays as it was:
// the other members and their order, each key as it was written, the white space. When each
// such member's value already is value, byte for byte, the result is data itself, not a copy;
// otherwise it is a new slice. Data that is not one valid JSON object is ErrNotObject. It applies
// no key rule: a caller that forwards the result has applied it to data (Members) first, so that
// no member differs from key only by case, and key appears once.
func SetMember(data []byte, key string, value []byte, edit MemberEdit) ([]byte, error) {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, ErrNotObject
	}
	var inline [2][2]int // the spans of the values to replace; one, in a body that passed Members
	spans := inline[:0]
	same := true
	last := -1 // the end of the last member's value, where a member is added
	i = SkipSpace(data, i+1)
	for i < len(data) && data[i] != '}' {
		keyEnd := stringEnd(data, i)
		from := memberKey(data, i)
		if keyEnd < 0 || from < 0 {
			return nil, ErrNotObject
		}
		to := valueEnd(data, from, 1)
		if to < 0 {
			return nil, ErrNotObject
		}
		if keyIs(data[i:keyEnd], key) {
			old := data[from:to]
			if edit.Replaces != nil && !edit.Replaces(old) {
				return nil, ErrMemberValue
			}
			same = same && string(old) == string(value)
			spans = append(spans, [2]int{from, to})
		}
		last = to
		if i = SkipSpace(data, to); i < len(data) && data[i] == ',' {
			if i = SkipSpace(data, i+1); i >= len(data) || data[i] == '}' {
				return nil, ErrNotObject // a trailing comma
			}
		} else if i >= len(data) || data[i] != '}' {
			return nil, ErrNotObject
		}
	}
	if i >= len(data) || SkipSpace(data, i+1) != len(data) {
		return nil, ErrNotObject
	}
	switch {
	case len(spans) == 0 && !edit.Add:
		return nil, ErrNoMember
	case len(spans) == 0:
		quoted := []byte(`"` + key + `"`)
		if !plainASCII([]byte(key)) || strings.Contains(key, `"`) {
			var err error
			if quoted, err = json.Marshal(key); err != nil {
				return nil, err
			}
		}
		at, comma := i, "" // the closing brace of an empty object
		if last >= 0 {
			at, comma = last, ","
		}
		out := make([]byte, 0, len(data)+len(comma)+len(quoted)+1+len(value))
		out = append(append(append(out, data[:at]...), comma...), quoted...)
		out = append(append(append(out, ':'), value...), data[at:]...)
		return out, nil
	case same:
		return data, nil
	}
	n := len(data)
	for _, s := range spans {
		n += len(value) - (s[1] - s[0])
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, s := range spans {
		out = append(append(out, data[prev:s[0]]...), value...)
		prev = s[1]
	}
	return append(out, data[prev:]...), nil
}

// keyIs reports whether raw, a JSON string with its quotes, decodes to key.
func keyIs(raw []byte, key string) bool {
	if inner := raw[1 : len(raw)-1]; plainASCII(inner) {
		return string(inner) == key
	}
	decoded, _ := decodeKey(raw)
	return decoded == key
}
