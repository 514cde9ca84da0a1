package jsonkeys

// maxNestingDepth is encoding/json's bound on nested objects and arrays: a value nested deeper
// is not valid JSON to it, so not to valid either.
const maxNestingDepth = 10000

// valid reports whether data is one JSON value (surrounded by white space or not), exactly as
// encoding/json's Valid does: the same grammar, string bytes (anything but a control character,
// a quote or a backslash passes unread, invalid UTF-8 included, as encoding/json lets it) and
// nesting bound. It reads each byte once without a state machine's call per byte, at a
// fraction of json.Valid's cost; FuzzValid holds the two to the same answer.
func valid(data []byte) bool {
	end := valueEnd(data, SkipSpace(data, 0), 0)
	return end >= 0 && SkipSpace(data, end) == len(data)
}

// valueEnd returns the index just past the JSON value that starts at i, or -1 when no valid
// value starts there; depth containers already open around it count toward the nesting bound.
func valueEnd(data []byte, i, depth int) int {
	var inline [64]bool // the open containers, true for an object; most bodies nest less
	open := inline[:0]
	for {
		// A value starts at i.
		if i >= len(data) {
			return -1
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth+len(open) == maxNestingDepth {
				return -1
			}
			open = append(open, c == '{')
			i = SkipSpace(data, i+1)
			if i >= len(data) {
				return -1
			}
			if c == '{' && data[i] != '}' {
				if i = memberKey(data, i); i < 0 {
					return -1
				}
				continue // its value
			}
			if c == '[' && data[i] != ']' {
				continue // its first element
			}
			open, i = open[:len(open)-1], i+1 // empty: a whole value
		case '"':
			if i = stringEnd(data, i); i < 0 {
				return -1
			}
		case 't':
			if i = literalEnd(data, i, "true"); i < 0 {
				return -1
			}
		case 'f':
			if i = literalEnd(data, i, "false"); i < 0 {
				return -1
			}
		case 'n':
			if i = literalEnd(data, i, "null"); i < 0 {
				return -1
			}
		default:
			if i = numberEnd(data, i); i < 0 {
				return -1
			}
		}
		// A value ended at i: close the containers it ends, up to the next value.
		next := false
		for !next {
			if len(open) == 0 {
				return i
			}
			if i = SkipSpace(data, i); i >= len(data) {
				return -1
			}
			object := open[len(open)-1]
			switch data[i] {
			case ',':
				i = SkipSpace(data, i+1)
				if object {
					if i = memberKey(data, i); i < 0 {
						return -1
					}
				}
				next = true
			case '}', ']':
				if (data[i] == '}') != object {
					return -1
				}
				open = open[:len(open)-1]
				i++
			default:
				return -1
			}
		}
	}
}

// SkipSpace returns the index of the first byte at or after i that is not JSON white space.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// memberKey reads an object member's key and its colon at i, and returns the index of the
// member's value (white space skipped), or -1.
func memberKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = stringEnd(data, i); i < 0 {
		return -1
	}
	i = SkipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return SkipSpace(data, i+1)
}

// stringEnd returns the index just past the string that starts (with its quote) at i, or -1.
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) || !isHex(data[i+1]) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) {
					return -1
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// literalEnd returns the index just past word at i, or -1 when word is not there.
func literalEnd(data []byte, i int, word string) int {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// numberEnd returns the index just past the number at i (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?),
// or -1. What follows it is its caller's to check.
func numberEnd(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digitsEnd(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		if i+1 >= len(data) || !isDigit(data[i+1]) {
			return -1
		}
		i = digitsEnd(data, i+1)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return -1
		}
		i = digitsEnd(data, i)
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitsEnd returns the index of the first byte at or after i that is not a digit.
func digitsEnd(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}
