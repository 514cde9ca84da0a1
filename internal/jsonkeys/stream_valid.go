package jsonkeys

// Validator reads one JSON text as it streams by, in pieces of any size, and tells whether it
// is valid as json.Valid tells of the whole (the same grammar and nesting bound; string bytes
// other than a control character, a quote or a backslash pass unread). It keeps a few bytes of
// state and one bit per open object or array, never the text: a string of megabytes (an image's
// base64) costs nothing but the reading. FuzzValidator holds it to json.Valid's answer.
type Validator struct {
	state   validState
	key     bool   // the string being read is a member name
	hex     int8   // the hex digits of a \u escape still to read
	literal string // the bytes of true, false or null still to read
	objects []bool // the open containers, true for an object
	failed  bool
}

type validState uint8

const (
	validValue        validState = iota // a value comes next
	validValueOrClose                   // after '[': a value or ']'
	validKeyOrClose                     // after '{': a member name or '}'
	validKey                            // after ',' in an object: a member name
	validColon                          // after a member name
	validAfter                          // after a value inside a container: ',' or its close
	validEnd                            // after the top-level value: white space only
	validString
	validEscape
	validHex // in a \u escape's hex digits
	validLiteral
	validMinus    // after '-': a digit
	validZero     // a number's integer part is 0
	validInt      // in a number's integer digits
	validDot      // after '.': a digit
	validFrac     // in a fraction's digits
	validExp      // after 'e': a sign or a digit
	validExpSign  // after the exponent's sign: a digit
	validExpDigit // in the exponent's digits
)

// Write reads the next piece of the text.
func (v *Validator) Write(p []byte) {
	for i := 0; i < len(p) && !v.failed; i++ {
		c := p[i]
		if v.state == validString {
			// The bulk of a long string: skip to the next byte that means something.
			j := i
			for j < len(p) && p[j] >= 0x20 && p[j] != '"' && p[j] != '\\' {
				j++
			}
			if i = j; i == len(p) {
				return
			}
			c = p[i]
		}
		v.byte(c)
	}
}

// Failed reports whether what was written is no beginning of a valid JSON text: whatever
// follows, Valid is false.
func (v *Validator) Failed() bool { return v.failed }

// Valid reports whether what was written is one whole valid JSON text.
func (v *Validator) Valid() bool {
	if v.failed {
		return false
	}
	switch v.state {
	case validEnd:
		return true
	case validZero, validInt, validFrac, validExpDigit:
		return len(v.objects) == 0 // a number at the top level ends with the text
	}
	return false
}

// byte reads one byte.
func (v *Validator) byte(c byte) {
	switch v.state {
	case validString:
		switch {
		case c == '"':
			v.state = validAfter
			if v.key {
				v.state = validColon
			}
			v.closed()
		case c == '\\':
			v.state = validEscape
		case c < 0x20:
			v.failed = true
		}
	case validEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			v.state = validString
		case 'u':
			v.state, v.hex = validHex, 4
		default:
			v.failed = true
		}
	case validHex:
		if !isDigit(c) && (c|0x20 < 'a' || c|0x20 > 'f') {
			v.failed = true
			return
		}
		if v.hex--; v.hex == 0 {
			v.state = validString
		}
	case validLiteral:
		if c != v.literal[0] {
			v.failed = true
			return
		}
		if v.literal = v.literal[1:]; v.literal == "" {
			v.state = validAfter
			v.closed()
		}
	case validMinus, validDot, validExpSign:
		if !isDigit(c) {
			v.failed = true
			return
		}
		switch {
		case v.state == validMinus && c == '0':
			v.state = validZero
		case v.state == validMinus:
			v.state = validInt
		case v.state == validDot:
			v.state = validFrac
		default:
			v.state = validExpDigit
		}
	case validZero, validInt, validFrac, validExpDigit, validExp:
		v.number(c)
	default:
		v.structural(c)
	}
}

// number reads a byte within or just after a number.
func (v *Validator) number(c byte) {
	switch {
	case v.state == validExp:
		if c == '+' || c == '-' {
			v.state = validExpSign
		} else if isDigit(c) {
			v.state = validExpDigit
		} else {
			v.failed = true
		}
	case isDigit(c) && v.state != validZero:
	case c == '.' && (v.state == validZero || v.state == validInt):
		v.state = validDot
	case (c == 'e' || c == 'E') && v.state != validExpDigit:
		v.state = validExp
	default:
		// The number ended; c is read after it.
		v.state = validAfter
		v.closed()
		v.structural(c)
	}
}

// structural reads a byte outside strings, literals and numbers.
func (v *Validator) structural(c byte) {
	if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
		return
	}
	switch v.state {
	case validValue, validValueOrClose:
		if c == ']' && v.state == validValueOrClose {
			v.close(false)
			return
		}
		v.value(c)
	case validKeyOrClose, validKey:
		switch {
		case c == '"':
			v.state, v.key = validString, true
		case c == '}' && v.state == validKeyOrClose:
			v.close(true)
		default:
			v.failed = true
		}
	case validColon:
		v.state = validValue
		v.failed = c != ':'
	case validAfter:
		top := len(v.objects) - 1
		switch {
		case c == ',' && v.objects[top]:
			v.state = validKey
		case c == ',':
			v.state = validValue
		case c == '}' || c == ']':
			v.close(c == '}')
		default:
			v.failed = true
		}
	default: // validEnd
		v.failed = true
	}
}

// value reads the first byte of a value.
func (v *Validator) value(c byte) {
	switch {
	case c == '{' || c == '[':
		if len(v.objects) == maxNestingDepth {
			v.failed = true
			return
		}
		v.objects = append(v.objects, c == '{')
		v.state = validValueOrClose
		if c == '{' {
			v.state = validKeyOrClose
		}
	case c == '"':
		v.state, v.key = validString, false
	case c == 't':
		v.state, v.literal = validLiteral, "rue"
	case c == 'f':
		v.state, v.literal = validLiteral, "alse"
	case c == 'n':
		v.state, v.literal = validLiteral, "ull"
	case c == '-':
		v.state = validMinus
	case c == '0':
		v.state = validZero
	case isDigit(c):
		v.state = validInt
	default:
		v.failed = true
	}
}

// close closes the innermost container, an object when object is true.
func (v *Validator) close(object bool) {
	top := len(v.objects) - 1
	if top < 0 || v.objects[top] != object {
		v.failed = true
		return
	}
	v.objects = v.objects[:top]
	v.state = validAfter
	v.closed()
}

// closed notes that a value ended: at the top level, only white space may follow.
func (v *Validator) closed() {
	if v.state == validAfter && len(v.objects) == 0 {
		v.state = validEnd
	}
}
