package keyadmin

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// errNotText is the refusal of a JSON body whose text is not Unicode as sent: encoding/json would
// read an invalid UTF-8 byte and an escaped lone surrogate each as U+FFFD, so "acme\xff" and
// "acme\xfe" would both name the account "acme\uFFFD", and a note would be kept as another text
// than the operator wrote.
var errNotText = errors.New(`the body is not UTF-8 text: it holds a byte that is not UTF-8, or an escaped lone surrogate such as \ud800 (an escaped character beyond U+FFFF is a pair, \ud83d\ude00)`)

// checkText refuses data, a JSON text, unless it is valid UTF-8 and every \u escape of a
// surrogate is one half of a pair in order (high, then low). It reads escapes wherever they are:
// outside a string a backslash is no JSON, which the decoder refuses anyway.
func checkText(data []byte) error {
	if !utf8.Valid(data) {
		return errNotText
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' || i+1 >= len(data) {
			continue
		}
		if data[i+1] != 'u' {
			i++ // \" \\ \/ \b \f \n \r \t: the next byte is not an escape's start
			continue
		}
		r, ok := escapedUnit(data[i:])
		switch {
		case !ok:
			continue // the decoder refuses a \u without four hex digits
		case r >= 0xDC00 && r < 0xE000:
			return errNotText // a low half with no high one before it
		case r >= 0xD800 && r < 0xDC00:
			if lo, ok := escapedUnit(data[i+6:]); !ok || lo < 0xDC00 || lo >= 0xE000 {
				return errNotText
			}
			i += 11 // the pair's two escapes
		default:
			i += 5
		}
	}
	return nil
}

// escapedUnit reads the UTF-16 code unit of the \uXXXX escape that b begins with.
func escapedUnit(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n), err == nil
}
