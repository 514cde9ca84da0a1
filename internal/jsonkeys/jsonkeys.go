// Package jsonkeys holds mediagw's one rule for the keys of a JSON object that the gateway checks
// before it forwards the body: every key appears once, and no key differs from a checked field only
// by letter case. Decoders disagree on both points (Go's encoding/json matches keys without regard
// to case and keeps the last of repeated keys; others match exactly or keep the first), so a body
// that breaks the rule could make an upstream see a field other than the one mediagw checked.
//
// Keys are compared after their JSON escapes are decoded ("mod\u0065l" is "model"), with Unicode
// simple case folding (so the Kelvin sign K and the long s ſ count as k and s, as they do for
// Go's encoding/json). A key that is not valid UTF-8, that holds an escaped lone surrogate, or that
// holds a control character is refused too, since decoders repair or truncate such keys differently.
package jsonkeys

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrNotObject is returned when the data is not one well-formed JSON object.
var ErrNotObject = errors.New("the body must be a JSON object")

// Problems a key can have.
const (
	Repeated = "repeated" // the key appears more than once
	Case     = "case"     // the key differs from a checked field only by case
	Unclear  = "unclear"  // the key is not valid UTF-8, or holds a lone surrogate or control character
)

// Error describes a refused key.
type Error struct {
	// Problem is Repeated, Case or Unclear.
	Problem string
	// Key is the key as sent, decoded (invalid bytes are shown as U+FFFD).
	Key string
	// Field is the checked field the key collides with; for a repeated key that is not a
	// checked field, the key itself.
	Field string
}

func (e *Error) Error() string {
	switch e.Problem {
	case Repeated:
		return "the key " + strconv.Quote(e.Key) + " appears more than once"
	case Case:
		return "the key " + strconv.Quote(e.Key) + " differs from " + strconv.Quote(e.Field) + " only by letter case; send " + strconv.Quote(e.Field) + " once, spelled exactly so"
	default:
		return "a key is not clear text (invalid UTF-8, a lone surrogate or a control character): " + strconv.Quote(e.Key)
	}
}

// Members returns the raw values of the checked fields present in the JSON object data, after
// checking the rule on all of its keys: a repeated key, a key that differs from one of fields only
// by case, or an unclear key is an *Error. Data that is not one JSON object is ErrNotObject.
// Only the object's own keys are checked, not those of nested objects.
func Members(data []byte, fields ...string) (map[string]json.RawMessage, error) {
	return membersMap(data, fields)
}

// MembersOf is Members writing the raw value of each checked field fields[i] into found[i] (nil
// when the object has no such member) instead of into a map: a caller that keeps found where it
// keeps its own variables reads a body without an allocation. found must be as long as fields.
func MembersOf(data []byte, fields []string, found []json.RawMessage) error {
	clear(found)
	err := members(data, fields, found, nil, nil)
	if err == ErrNotObject {
		clear(found) // what members found before the data went wrong
	}
	return err
}

// Fields are checked fields made ready once, for a list that many bodies are read with:
// MembersOfFields compares each key with the fields of its own length only (when every field is
// ASCII, only those can be the key or differ from it by case alone), not with every field.
type Fields struct {
	names []string
	// byLength are the indexes of the names of each length in bytes, in order (the last: 63
	// and more); nil when a name is not ASCII (one past ASCII may fold to a key of another
	// length: the Kelvin sign, the long s).
	byLength *[64][]int
}

// NewFields makes names ready for MembersOfFields. names must not change afterwards.
func NewFields(names ...string) *Fields {
	f := &Fields{names: names}
	if !slices.ContainsFunc(names, func(n string) bool { return !asciiOnly(n) }) {
		f.byLength = new([64][]int)
		for i, n := range names {
			f.byLength[min(len(n), 63)] = append(f.byLength[min(len(n), 63)], i)
		}
	}
	return f
}

// Names are the fields, as NewFields was given them.
func (f *Fields) Names() []string { return f.names }

// MembersOfFields is MembersOf(data, fields.Names(), found), the same outcome for any data.
func MembersOfFields(data []byte, fields *Fields, found []json.RawMessage) error {
	clear(found)
	err := members(data, fields.names, found, nil, fields.byLength)
	if err == ErrNotObject {
		clear(found)
	}
	return err
}

// MembersValid is Members, kept for the callers that read data already known to be valid JSON
// (bytes that json.Valid, Members or Check accepted): Members checks validity in the same pass
// that reads the keys, so it costs them nothing more, and its outcome is Members' for any data.
func MembersValid(data []byte, fields ...string) (map[string]json.RawMessage, error) {
	return membersMap(data, fields)
}

// All is Members returning every member of the object, checked or not, under its decoded key:
// what encoding/json decodes the object into as a map[string]json.RawMessage, once the rule
// holds (no key repeats, so no decoder's choice between repeats matters). The values are slices
// of data, not copies.
func All(data []byte, fields ...string) (map[string]json.RawMessage, error) {
	values := make(map[string]json.RawMessage)
	if err := members(data, fields, make([]json.RawMessage, len(fields)), values, nil); err != nil {
		return nil, err
	}
	return values, nil
}

// membersMap is members' checked fields present, in a map under their names.
func membersMap(data []byte, fields []string) (map[string]json.RawMessage, error) {
	var few [16]json.RawMessage
	found := few[:0]
	if len(fields) <= len(few) {
		found = few[:len(fields)]
	} else {
		found = make([]json.RawMessage, len(fields))
	}
	if err := members(data, fields, found, nil, nil); err != nil {
		return nil, err
	}
	values := make(map[string]json.RawMessage)
	for i, f := range fields {
		if found[i] != nil {
			values[f] = found[i]
		}
	}
	return values, nil
}

// members applies the rule to JSON data, puts the value of each checked field fields[i] it finds
// in found[i], and, with a non-nil all, every member in all under its decoded key. It checks
// that data is one valid JSON object (valid's rule) as it reads it, in the same pass: data that
// is not is ErrNotObject, before any refused key. byLength, when not nil, is Fields.byLength of
// fields: an ASCII key is compared with the fields of its length only.
func members(data []byte, fields []string, found []json.RawMessage, all map[string]json.RawMessage, byLength *[64][]int) error {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ErrNotObject
	}
	// The keys seen so far, for the repeat check: a short list for the usual object, a set
	// past a few keys. A key is kept as bytes (for a plain key, the bytes of data itself), and
	// made a string only where one outlives the loop (an error, a key of All's map): most
	// bodies are checked without allocating for their keys.
	var few [16][]byte
	n := 0
	var seen map[string]bool
	if i = SkipSpace(data, i+1); i < len(data) && data[i] == '}' {
		return objectEnds(data, i)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return ErrNotObject
		}
		keyEnd := stringEnd(data, i)
		if keyEnd < 0 {
			return ErrNotObject
		}
		raw := data[i:keyEnd]
		if i = SkipSpace(data, keyEnd); i >= len(data) || data[i] != ':' {
			return ErrNotObject
		}
		start := SkipSpace(data, i+1)
		if i = valueEnd(data, start, 1); i < 0 {
			return ErrNotObject
		}
		value := data[start:i]
		key, clear := keyBytes(raw)
		if !clear {
			// Name the checked field the key would become if a decoder dropped what is unclear.
			k := string(key)
			return keyError(data, &Error{Problem: Unclear, Key: k, Field: fieldFor(strings.Map(dropUnclear, k), fields)})
		}
		if n < len(few) {
			if slices.ContainsFunc(few[:n], func(k []byte) bool { return string(k) == string(key) }) {
				return keyError(data, repeatedKey(string(key), fields))
			}
			few[n], n = key, n+1
		} else {
			if seen == nil {
				seen = make(map[string]bool, 2*len(few))
				for _, k := range few {
					seen[string(k)] = true
				}
			}
			if seen[string(key)] {
				return keyError(data, repeatedKey(string(key), fields))
			}
			seen[string(key)] = true
		}
		keyASCII := asciiOnly(key)
		if keyASCII && byLength != nil {
			// The fields of another length are neither the key nor the key in another case.
			for _, j := range byLength[min(len(key), 63)] {
				if f := fields[j]; string(key) == f {
					found[j] = value
				} else if equalFold(key, true, f) {
					return keyError(data, &Error{Problem: Case, Key: string(key), Field: f})
				}
			}
		} else {
			for j, f := range fields {
				if string(key) == f {
					found[j] = value
				} else if !(keyASCII && unlikeASCII(key, f)) && equalFold(key, keyASCII, f) {
					return keyError(data, &Error{Problem: Case, Key: string(key), Field: f})
				}
			}
		}
		if all != nil {
			all[string(key)] = value
		}
		if i = SkipSpace(data, i); i < len(data) && data[i] == '}' {
			return objectEnds(data, i)
		}
		if i >= len(data) || data[i] != ',' {
			return ErrNotObject
		}
		i = SkipSpace(data, i+1)
	}
}

// objectEnds is members' answer at the object's closing brace at i: nothing may follow it but
// white space.
func objectEnds(data []byte, i int) error {
	if SkipSpace(data, i+1) != len(data) {
		return ErrNotObject
	}
	return nil
}

// keyError is members' answer for a refused key: ErrNotObject if the rest of data is not valid
// JSON (data that is not one object is refused as such, whatever its keys), else the key's error.
func keyError(data []byte, err *Error) error {
	if !valid(data) {
		return ErrNotObject
	}
	return err
}

// keyBytes is decodeKey as bytes: for a plain key (the usual one), the bytes between the quotes
// of raw itself, without a copy.
func keyBytes(raw []byte) (key []byte, clear bool) {
	if inner := raw[1 : len(raw)-1]; plainASCII(inner) {
		return inner, true
	}
	k, clear := decodeKey(raw)
	return []byte(k), clear
}

// equalFold is strings.EqualFold of key and field, without making key a string; keyASCII says
// whether key is ASCII only (asked once per key, not once per field). An ASCII key is compared
// here with a field of its length (a field of its length with a byte past ASCII cannot fold to
// it) and is unequal to a shorter one; a longer field folds to it only with a sign that folds to
// an ASCII letter (the Kelvin sign, the long s), so only a longer field past ASCII, and a key
// past ASCII, go through strings.EqualFold.
func equalFold(key []byte, keyASCII bool, field string) bool {
	if !keyASCII {
		return strings.EqualFold(string(key), field)
	}
	if len(key) != len(field) {
		// Only a field longer in bytes, with a letter of several bytes that folds to an ASCII one
		// (the Kelvin sign, the long s), can equal an ASCII key. A first or last byte that is
		// ASCII and differs from the key's in any case rules it out without reading the field
		// through (each letter of the field stands for one of the key).
		last := len(field) - 1
		if len(field) <= len(key) || len(key) > 0 &&
			(field[0] < utf8.RuneSelf && lowerASCII(field[0]) != lowerASCII(key[0]) ||
				field[last] < utf8.RuneSelf && lowerASCII(field[last]) != lowerASCII(key[len(key)-1])) {
			return false
		}
		// Up to the field's first byte past ASCII, each of its bytes is a letter that stands
		// for the key's at the same place; a field whose first len(key) bytes are all ASCII has
		// more letters than the key.
		for i := range len(key) {
			if field[i] >= utf8.RuneSelf {
				return strings.EqualFold(string(key), field)
			}
			if lowerASCII(field[i]) != lowerASCII(key[i]) {
				return false
			}
		}
		return false
	}
	for i := range len(key) {
		if lowerASCII(key[i]) != lowerASCII(field[i]) {
			return false
		}
	}
	return true
}

// unlikeASCII reports, without a call, the usual reasons why the ASCII key differs from field in
// every letter case: field is shorter (each of its letters stands for one of the key), or its first
// or last byte is ASCII and another than the key's first or last in any case (compared with the
// case bit set: bytes that differ so differ in lower case too). Most checked fields differ from a
// key so; the others go through equalFold.
func unlikeASCII(key []byte, field string) bool {
	k, f := len(key)-1, len(field)-1
	return f < k || k >= 0 && (field[0] < utf8.RuneSelf && field[0]|0x20 != key[0]|0x20 ||
		field[f] < utf8.RuneSelf && field[f]|0x20 != key[k]|0x20)
}

// lowerASCII is c in lower case when it is an ASCII capital letter, else c.
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// asciiOnly reports whether b holds only ASCII bytes.
func asciiOnly[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if b[i] >= 0x80 {
			return false
		}
	}
	return true
}

// repeatedKey is the error of a key that appears twice.
func repeatedKey(key string, fields []string) *Error {
	return &Error{Problem: Repeated, Key: key, Field: fieldFor(key, fields)}
}

// Check applies the rule of Members and keeps no values.
func Check(data []byte, fields ...string) error {
	_, err := Members(data, fields...)
	return err
}

func dropUnclear(r rune) rune {
	if isControl(r) {
		return -1
	}
	return r
}

func fieldFor(key string, fields []string) string {
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			return f
		}
	}
	return key
}

// decodeKey decodes a raw JSON string (with its quotes). clear is false when the key is not valid
// UTF-8, holds an escaped lone surrogate, or holds a control character.
func decodeKey(raw []byte) (key string, clear bool) {
	if inner := raw[1 : len(raw)-1]; plainASCII(inner) {
		return string(inner), true // what the loop below would build, without building it
	}
	if !utf8.Valid(raw) {
		return strings.ToValidUTF8(string(raw[1:len(raw)-1]), "\uFFFD"), false
	}
	var b strings.Builder
	clear = true
	for i := 1; i < len(raw)-1; {
		c := raw[i]
		if c != '\\' {
			r, size := utf8.DecodeRune(raw[i:])
			b.WriteRune(r)
			clear = clear && !isControl(r)
			i += size
			continue
		}
		esc := raw[i+1]
		i += 2
		if esc != 'u' {
			switch esc {
			case '"', '\\', '/':
				b.WriteByte(esc)
			default: // \b \f \n \r \t: control characters
				b.WriteByte(map[byte]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[esc])
				clear = false
			}
			continue
		}
		r := hex4(raw[i:])
		i += 4
		if r >= 0xD800 && r < 0xDC00 && i+6 <= len(raw)-1 && raw[i] == '\\' && raw[i+1] == 'u' {
			if lo := hex4(raw[i+2:]); lo >= 0xDC00 && lo < 0xE000 {
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			}
		}
		if r >= 0xD800 && r < 0xE000 {
			b.WriteRune(utf8.RuneError)
			clear = false
			continue
		}
		b.WriteRune(r)
		clear = clear && !isControl(r)
	}
	return b.String(), clear
}

func hex4(b []byte) rune {
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return utf8.RuneError
	}
	return rune(n)
}

// plainASCII reports whether b is printable ASCII without a backslash: a key that decodes to
// itself and is clear.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// isControl reports C0 and C1 control characters and U+FFFD, which decoders substitute for bytes
// they cannot read.
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r < 0xa0) || r == utf8.RuneError
}

// scanner walks JSON that valid (json.Valid's equal) accepted, so it needs no error handling of
// its own.
type scanner struct {
	data []byte
	pos  int
	// paths are Strings' paths, one per depth (see pathAt).
	paths []Path
}

func (s *scanner) space() { s.pos = SkipSpace(s.data, s.pos) }

func (s *scanner) consume(c byte) bool {
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// str reads a string and returns it raw, quotes included.
func (s *scanner) str() []byte {
	start := s.pos
	s.pos++ // opening quote
	for s.data[s.pos] != '"' {
		if s.data[s.pos] == '\\' {
			s.pos++
		}
		s.pos++
	}
	s.pos++
	return s.data[start:s.pos]
}

// value skips one value.
func (s *scanner) value() {
	switch s.data[s.pos] {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for {
			switch s.data[s.pos] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.pos++
			if depth == 0 {
				return
			}
		}
	default: // numbers and literals
		for s.pos < len(s.data) && !strings.ContainsRune(",}] \t\n\r", rune(s.data[s.pos])) {
			s.pos++
		}
	}
}
