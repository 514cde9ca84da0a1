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
	if !json.Valid(data) {
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
// keeps its String, not the path. One path is allocated per object or array, not per value. Data that is not valid JSON is ErrNotObject; data nested
// deeper than MaxWalkDepth is ErrTooDeep. An error from visit stops the walk and is returned.
func Strings(data []byte, base *Path, visit func(path *Path, raw []byte) error) error {
	if !json.Valid(data) {
		return ErrNotObject
	}
	s := scanner{data: data}
	s.space()
	return s.strings(base, 0, visit)
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
		var inner *Path // allocated at the first value that needs one
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
					inner = &Path{Parent: path}
				}
				inner.Key, inner.Index = "", i
				if object {
					inner.Key, _ = decodeKey(key)
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
