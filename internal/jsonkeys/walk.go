package jsonkeys

import (
	"encoding/json"
	"errors"
	"strconv"
)

// MaxWalkDepth bounds how deeply Walk descends: a body nested deeper is refused with
// ErrTooDeep. Real request bodies (JSON schemas of tools included) stay far below it.
const MaxWalkDepth = 64

// ErrTooDeep is returned by Walk for data nested deeper than MaxWalkDepth.
var ErrTooDeep = errors.New("the body is nested too deeply")

// Member is one key of a JSON object, decoded, and its raw value.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Path locates a value in a document: the document itself is nil, a member of an object is
// its key under the object's path, an element of an array its index. Its String is the form
// used in error params: "input[2].content[0].file_id".
type Path struct {
	Parent *Path
	// Key is the member's key, or "" for an array element.
	Key string
	// Index is the element's index, or -1 for a member.
	Index int
}

func (p *Path) String() string {
	if p == nil {
		return ""
	}
	if p.Index >= 0 {
		return p.Parent.String() + "[" + strconv.Itoa(p.Index) + "]"
	}
	if p.Parent == nil {
		return p.Key
	}
	return p.Parent.String() + "." + p.Key
}

// Visit is called by Walk for every object in a document, with the object's path and its
// members in order, each already checked against the rule of Members.
type Visit func(path *Path, members []Member) error

// Walk calls visit for every object in data, at any depth, inner objects before the object that
// holds them. Every object must follow the rule of Members on its own keys: a repeated key or an
// unclear key is an *Error whose Field is the key's path ("input[0].type"). A case variant is not
// refused here, since Walk knows no checked fields below the top: the visitor decides what a key
// that differs from one it cares about only by case means. Data that is not valid JSON is
// ErrNotObject; data nested deeper than MaxWalkDepth is ErrTooDeep. An error from visit stops the
// walk and is returned.
func Walk(data []byte, visit Visit) error {
	if !valid(data) {
		return ErrNotObject
	}
	return WalkValid(data, visit)
}

// WalkValid is Walk for data already known to be valid JSON: bytes that json.Valid, Members or
// Check accepted, unchanged since. It does not check them again, which halves the cost of a walk;
// given anything else its outcome is undefined (it may panic), so a caller that cannot show where
// its bytes were checked calls Walk.
func WalkValid(data []byte, visit Visit) error {
	s := scanner{data: data}
	s.space()
	return s.walk(nil, 0, visit)
}

// walk reads the value at s.pos and visits the objects in it, in one pass.
func (s *scanner) walk(path *Path, depth int, visit Visit) error {
	switch s.data[s.pos] {
	case '{':
		if depth >= MaxWalkDepth {
			return ErrTooDeep
		}
		return s.walkObject(path, depth, visit)
	case '[':
		if depth >= MaxWalkDepth {
			return ErrTooDeep
		}
		s.pos++
		s.space()
		if s.consume(']') {
			return nil
		}
		for i := 0; ; i++ {
			s.space()
			if c := s.data[s.pos]; c == '{' || c == '[' {
				if err := s.walk(&Path{Parent: path, Index: i}, depth+1, visit); err != nil {
					return err
				}
			} else {
				s.value()
			}
			s.space()
			if s.consume(']') {
				return nil
			}
			s.consume(',')
		}
	default:
		s.value()
		return nil
	}
}

func (s *scanner) walkObject(path *Path, depth int, visit Visit) error {
	s.pos++
	var members []Member
	var seen map[string]bool // for objects with many keys; a few are compared in a loop
	s.space()
	if !s.consume('}') {
		for {
			s.space()
			key, clear := decodeKey(s.str())
			if !clear {
				return &Error{Problem: Unclear, Key: key, Field: (&Path{Parent: path, Key: key, Index: -1}).String()}
			}
			if repeated(members, &seen, key) {
				return &Error{Problem: Repeated, Key: key, Field: (&Path{Parent: path, Key: key, Index: -1}).String()}
			}
			s.space()
			s.consume(':')
			s.space()
			from := s.pos
			if c := s.data[s.pos]; c == '{' || c == '[' {
				if err := s.walk(&Path{Parent: path, Key: key, Index: -1}, depth+1, visit); err != nil {
					return err
				}
			} else {
				s.value()
			}
			members = append(members, Member{Key: key, Value: s.data[from:s.pos]})
			s.space()
			if s.consume('}') {
				break
			}
			s.consume(',')
		}
	}
	return visit(path, members)
}

// repeated reports whether key is among members, keeping the set in *seen once there are many.
func repeated(members []Member, seen *map[string]bool, key string) bool {
	const few = 16
	if len(members) < few {
		for _, m := range members {
			if m.Key == key {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]bool, 2*few)
		for _, m := range members {
			(*seen)[m.Key] = true
		}
	}
	if (*seen)[key] {
		return true
	}
	(*seen)[key] = true
	return false
}
