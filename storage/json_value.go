package storage

// jsonValue reads one JSON value (the Result of a task record) without encoding/json's
// scanner, which spends a function call on every byte. It is strict: it accepts exactly the
// values that encoding/json accepts, or answers false and leaves the value to encoding/json,
// which then writes or reads it, or reports its error. Values nested deeper than
// maxFastJSONDepth are left to encoding/json too.
type jsonValue struct {
	src []byte
	i   int
	// dst, when emit is set, receives the value as json.Marshal writes a json.RawMessage:
	// without insignificant whitespace, and with <, >, &, U+2028 and U+2029 escaped in strings.
	dst   []byte
	emit  bool
	depth int
}

// maxFastJSONDepth bounds the nesting that jsonValue follows (encoding/json allows 10,000).
const maxFastJSONDepth = 64

// appendCompactValue appends src to dst as json.Marshal writes a json.RawMessage holding it.
// ok is false when src is not exactly one valid JSON value (or is nested too deep): dst is then
// to be dropped, and json.Marshal tells the error.
func appendCompactValue(dst, src []byte) (out []byte, ok bool) {
	v := jsonValue{src: src, dst: dst, emit: true}
	v.space()
	if !v.value() {
		return dst, false
	}
	v.space()
	return v.dst, v.i == len(src)
}

// skipValue reads the JSON value that starts at src[i] and returns where it ends, or false
// when it is not a valid value.
func skipValue(src []byte, i int) (end int, ok bool) {
	v := jsonValue{src: src, i: i}
	if !v.value() {
		return i, false
	}
	return v.i, true
}

// space skips insignificant whitespace.
func (v *jsonValue) space() {
	for v.i < len(v.src) {
		switch v.src[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

// put copies the bytes read since start to dst.
func (v *jsonValue) put(start int) {
	if v.emit {
		v.dst = append(v.dst, v.src[start:v.i]...)
	}
}

func (v *jsonValue) value() bool {
	if v.i >= len(v.src) {
		return false
	}
	switch c := v.src[v.i]; {
	case c == '{':
		return v.object()
	case c == '[':
		return v.array()
	case c == '"':
		return v.str()
	case c == '-' || c >= '0' && c <= '9':
		return v.number()
	case c == 't':
		return v.word("true")
	case c == 'f':
		return v.word("false")
	case c == 'n':
		return v.word("null")
	}
	return false
}

func (v *jsonValue) object() bool {
	if v.depth++; v.depth > maxFastJSONDepth {
		return false
	}
	v.i++
	if v.emit {
		v.dst = append(v.dst, '{')
	}
	v.space()
	if v.i < len(v.src) && v.src[v.i] == '}' {
		return v.close('}')
	}
	for {
		if v.i >= len(v.src) || v.src[v.i] != '"' || !v.str() {
			return false
		}
		v.space()
		if v.i >= len(v.src) || v.src[v.i] != ':' {
			return false
		}
		v.i++
		if v.emit {
			v.dst = append(v.dst, ':')
		}
		v.space()
		if !v.value() {
			return false
		}
		if more, ok := v.after('}'); !more {
			return ok
		}
	}
}

func (v *jsonValue) array() bool {
	if v.depth++; v.depth > maxFastJSONDepth {
		return false
	}
	v.i++
	if v.emit {
		v.dst = append(v.dst, '[')
	}
	v.space()
	if v.i < len(v.src) && v.src[v.i] == ']' {
		return v.close(']')
	}
	for {
		if !v.value() {
			return false
		}
		if more, ok := v.after(']'); !more {
			return ok
		}
	}
}

// after reads what follows a member or an element: a comma (more follow; the comma and the
// space after it are consumed), or end, which closes the object or array (ok is close's outcome).
func (v *jsonValue) after(end byte) (more, ok bool) {
	v.space()
	if v.i >= len(v.src) {
		return false, false
	}
	switch v.src[v.i] {
	case ',':
		v.i++
		if v.emit {
			v.dst = append(v.dst, ',')
		}
		v.space()
		return true, true
	case end:
		return false, v.close(end)
	}
	return false, false
}

// close ends an object or array at its closing bracket c.
func (v *jsonValue) close(c byte) bool {
	v.i++
	v.depth--
	if v.emit {
		v.dst = append(v.dst, c)
	}
	return true
}

// str reads a string. Any byte from 0x20 up is taken as it is, as encoding/json takes it
// (invalid UTF-8 included); the escapes are checked.
func (v *jsonValue) str() bool {
	start := v.i
	v.i++
	for v.i < len(v.src) {
		switch c := v.src[v.i]; {
		case c == '"':
			v.i++
			v.put(start)
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if v.i+1 >= len(v.src) {
				return false
			}
			switch v.src[v.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i += 2
			case 'u':
				if v.i+6 > len(v.src) {
					return false
				}
				for _, h := range v.src[v.i+2 : v.i+6] {
					if !isHex(h) {
						return false
					}
				}
				v.i += 6
			default:
				return false
			}
		case v.emit && (c == '<' || c == '>' || c == '&'):
			v.put(start)
			v.dst = append(v.dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			v.i++
			start = v.i
		case v.emit && c == 0xE2 && v.i+2 < len(v.src) && v.src[v.i+1] == 0x80 && v.src[v.i+2]&^1 == 0xA8:
			v.put(start)
			v.dst = append(v.dst, '\\', 'u', '2', '0', '2', hexDigits[v.src[v.i+2]&0xF])
			v.i += 3
			start = v.i
		default:
			v.i++
		}
	}
	return false
}

// number reads a number: an optional minus, an integer part without leading zeros, an optional
// fraction and an optional exponent.
func (v *jsonValue) number() bool {
	start := v.i
	if v.src[v.i] == '-' {
		v.i++
	}
	switch {
	case v.i < len(v.src) && v.src[v.i] == '0':
		v.i++
	case v.digits() == 0:
		return false
	}
	if v.i < len(v.src) && v.src[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return false
		}
	}
	if v.i < len(v.src) && (v.src[v.i] == 'e' || v.src[v.i] == 'E') {
		v.i++
		if v.i < len(v.src) && (v.src[v.i] == '+' || v.src[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return false
		}
	}
	v.put(start)
	return true
}

// digits skips decimal digits and tells how many.
func (v *jsonValue) digits() int {
	start := v.i
	for v.i < len(v.src) && v.src[v.i] >= '0' && v.src[v.i] <= '9' {
		v.i++
	}
	return v.i - start
}

// word reads the literal w (true, false, null).
func (v *jsonValue) word(w string) bool {
	if len(v.src)-v.i < len(w) || string(v.src[v.i:v.i+len(w)]) != w {
		return false
	}
	start := v.i
	v.i += len(w)
	v.put(start)
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

const hexDigits = "0123456789abcdef"
