package jsonkeys

import (
	"encoding/json"
	"slices"
)

// Others returns the members of the JSON object data whose keys are not among fields, in order,
// with their keys decoded: the fields a caller forwards without reading them. Data that is not a
// JSON object gives nil. It reads data without checking the rule of Members, so a caller that
// needs the rule calls Members or Check on the same data first; a repeated key is returned once
// per appearance.
func Others(data []byte, fields ...string) []Member {
	if !valid(data) {
		return nil
	}
	return OthersValid(data, fields...)
}

// OthersValid is Others for data already known to be valid JSON (see WalkValid): bytes that
// json.Valid, Members or Check accepted, or a value of them, unchanged since. Given anything
// else its outcome is undefined.
func OthersValid(data []byte, fields ...string) []Member {
	s := scanner{data: data}
	s.space()
	if !s.consume('{') {
		return nil
	}
	var others []Member
	for {
		s.space()
		if s.consume('}') {
			return others
		}
		raw := s.str()
		s.space()
		s.consume(':')
		s.space()
		from := s.pos
		s.value()
		// A checked field spelled plainly, the usual case, is recognised without a copy.
		inner := raw[1 : len(raw)-1]
		if !plainASCII(inner) || !slices.ContainsFunc(fields, func(f string) bool { return f == string(inner) }) {
			if key, _ := decodeKey(raw); !slices.Contains(fields, key) {
				others = append(others, Member{Key: key, Value: data[from:s.pos]})
			}
		}
		s.space()
		s.consume(',')
	}
}

// ElementsValid returns the elements of the JSON array data, in order, as slices of data; ok is
// false when data is not an array. Data must be valid JSON, as for OthersValid.
func ElementsValid(data []byte) (elements []json.RawMessage, ok bool) {
	s := scanner{data: data}
	s.space()
	if !s.consume('[') {
		return nil, false
	}
	elements = []json.RawMessage{}
	for {
		s.space()
		if s.consume(']') {
			return elements, true
		}
		from := s.pos
		s.value()
		elements = append(elements, data[from:s.pos])
		s.space()
		s.consume(',')
	}
}

// Strings calls visit for every string value in the JSON value data, at any depth in its objects
// and arrays, with the string's path under base and the string raw (quotes and escapes
// included). Keys are not visited. The path is the walk's own and changes as it goes on: visit
// keeps its String, not the path. The paths of one depth share one Path, allocated with the
// others of the walk. Data that is not valid JSON is ErrNotObject; data nested deeper than
// MaxWalkDepth is ErrTooDeep. An error from visit stops the walk and is returned.
func Strings(data []byte, base *Path, visit func(path *Path, raw []byte) error) error {
	if !valid(data) {
		return ErrNotObject
	}
	return StringsValid(data, base, visit)
}

// StringsValid is Strings for data already known to be valid JSON: bytes that json.Valid,
// Members or Check accepted, or a value of them, unchanged since. It does not check them again,
// which saves a pass over the whole body; given anything else its outcome is undefined (it may
// panic), so a caller that cannot show where its bytes were checked calls Strings.
func StringsValid(data []byte, base *Path, visit func(path *Path, raw []byte) error) error {
	s := scanner{data: data}
	s.space()
	return s.strings(base, 0, visit)
}

// pathAt returns the path of the members or elements of a container at depth, under parent:
// one per depth for the whole walk, since the containers at one depth are walked one after the
// other (the walk's paths change as it goes on, see Strings).
func (s *scanner) pathAt(depth int, parent *Path) *Path {
	switch {
	case depth < len(s.paths):
	case depth < cap(s.paths):
		s.paths = s.paths[:depth+1]
	default:
		// A new slice; the containers being walked keep their paths in the old one, and every
		// path is set afresh when it is taken. Four to start with: a chat body of text messages
		// (messages[i].content) needs three.
		s.paths = make([]Path, depth+1, max(4, 2*(depth+1)))
	}
	p := &s.paths[depth]
	*p = Path{Parent: parent}
	return p
}

// pathKey is decodeKey(raw)'s key, without a copy for the keys that dialogue and media bodies
// repeat in every message and part, and those that open them.
func pathKey(raw []byte) string {
	switch string(raw[1 : len(raw)-1]) {
	case "role":
		return "role"
	case "content":
		return "content"
	case "type":
		return "type"
	case "text":
		return "text"
	case "image_url":
		return "image_url"
	case "url":
		return "url"
	case "name":
		return "name"
	case "arguments":
		return "arguments"
	case "function":
		return "function"
	case "tool_calls":
		return "tool_calls"
	case "id":
		return "id"
	case "model":
		return "model"
	case "messages":
		return "messages"
	case "input":
		return "input"
	case "prompt":
		return "prompt"
	}
	key, _ := decodeKey(raw)
	return key
}

// strings reads the value at s.pos and visits the strings in it.
func (s *scanner) strings(path *Path, depth int, visit func(*Path, []byte) error) error {
	switch s.data[s.pos] {
	case '"':
		return visit(path, s.str())
	case '{', '[':
		if depth >= MaxWalkDepth {
			return ErrTooDeep
		}
		object := s.data[s.pos] == '{'
		s.pos++
		var inner *Path // taken at the first value that needs one
		for i := 0; ; i++ {
			s.space()
			if s.consume('}') || s.consume(']') {
				return nil
			}
			var key []byte
			if object {
				key = s.str()
				s.space()
				s.consume(':')
				s.space()
			}
			if c := s.data[s.pos]; c != '"' && c != '{' && c != '[' {
				s.value() // a number or literal holds no string
			} else {
				if inner == nil {
					inner = s.pathAt(depth, path)
				}
				inner.Key, inner.Index = "", i
				if object {
					inner.Key = pathKey(key)
					inner.Index = -1
				}
				if err := s.strings(inner, depth+1, visit); err != nil {
					return err
				}
			}
			s.space()
			s.consume(',')
		}
	default:
		s.value()
		return nil
	}
}
