package usage

import (
	"encoding/json"
	"github.com/mediagw/mediagw/internal/jsonkeys"
	"strconv"
	"strings"
)

// usageFields are rawUsage's JSON names, in the order of its fields.
var usageFields = [...]string{"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens",
	"output_tokens", "promptTokenCount", "candidatesTokenCount", "totalTokenCount", "thoughtsTokenCount",
	"cache_creation_input_tokens", "cache_read_input_tokens", "toolUsePromptTokenCount"}

// decodeUsage decodes a usage object exactly as json.Unmarshal into a rawUsage does, and reports
// whether that succeeded. Objects with ASCII member names and no escapes in them (every
// provider's) are validated and read in one pass by a small scanner, without reflection or
// allocation; anything else goes to json.Unmarshal, which checks the whole of obj is valid
// JSON before it decodes any of it.
func decodeUsage(obj []byte) (usageCounts, bool) {
	var u usageCounts
	if end, ok, decided := scanUsage(obj, &u); decided && jsonkeys.SkipSpace(obj, end) == len(obj) {
		return u, ok
	}
	var raw rawUsage
	if json.Unmarshal(obj, &raw) != nil {
		return usageCounts{}, false
	}
	return raw.counts(), true
}

// scanUsage reads the object that obj begins with (after spaces) into u if it is a valid JSON
// object whose member names and string values are ASCII without escapes or control characters:
// then decided is true, end is where the object ends in obj (what follows it is not read), and
// ok is what json.Unmarshal of the object alone would report (a known member, matched without
// regard to ASCII case, must be null or an integer that fits int64). Anything else (invalid JSON
// among it, or obj ending before the object does) is left undecided, with u in no particular
// state. A nested object or array is validated with json.Valid.
func scanUsage(obj []byte, u *usageCounts) (end int, ok, decided bool) {
	i := jsonkeys.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, false, false
	}
	ok = true
	i = jsonkeys.SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return i + 1, true, true
	}
	for {
		nameEnd, plain := plainString(obj, i)
		if !plain {
			return 0, false, false
		}
		name := obj[i+1 : nameEnd-1]
		if i = jsonkeys.SkipSpace(obj, nameEnd); i >= len(obj) || obj[i] != ':' {
			return 0, false, false
		}
		i = jsonkeys.SkipSpace(obj, i+1)
		valueEnd, valid := validValue(obj, i)
		if !valid {
			return 0, false, false
		}
		if strings.EqualFold(string(name), cacheCreationField) {
			// Anthropic's split of its cache writes by TTL: decoded as json.Unmarshal decodes
			// rawUsage.CacheCreation (null, or an object of int64 counts).
			if value := obj[i:valueEnd]; string(value) != "null" {
				var cc cacheCreation
				if value[0] != '{' || json.Unmarshal(value, &cc) != nil {
					ok = false
				} else if cc.Ephemeral1h != nil {
					// json.Unmarshal decodes a repeated object into the one before: a count
					// the later one leaves out stays.
					u.hourWrites = cc.hour()
				}
			} else {
				u.hourWrites = 0
			}
		} else if field := usageField(name); field >= 0 {
			switch value := obj[i:valueEnd]; {
			case string(value) == "null":
				u.set(field, 0, true) // as json.Unmarshal sets a pointer to nil
			case value[0] == '-' || value[0] >= '0' && value[0] <= '9':
				n, err := parseCount(value)
				if err != nil {
					ok = false // a fraction, an exponent or too large: json.Unmarshal goes on, then fails
				} else {
					u.set(field, n, false)
				}
			default:
				ok = false
			}
		}
		if i = jsonkeys.SkipSpace(obj, valueEnd); i >= len(obj) {
			return 0, false, false
		}
		switch obj[i] {
		case ',':
			i = jsonkeys.SkipSpace(obj, i+1)
		case '}':
			return i + 1, ok, true
		default:
			return 0, false, false
		}
	}
}

// cacheCreationField is Anthropic's usage member that splits its cache writes by TTL.
const cacheCreationField = "cache_creation"

// usageField is the index in usageFields of a member name, matched without regard to ASCII
// case, or -1. Every provider spells the names as usageFields does: those are tried first, as
// they are, before a match that folds case (no two names of usageFields are the same folded).
func usageField(name []byte) int {
	for f, known := range usageFields {
		if string(name) == known {
			return f
		}
	}
	for f, known := range usageFields {
		if len(name) == len(known) && strings.EqualFold(string(name), known) {
			return f
		}
	}
	return -1
}

// parseCount is strconv.ParseInt(string(value), 10, 64) for a value validNumber accepted; the
// usual short integers are read without it.
func parseCount(value []byte) (int64, error) {
	digits := value
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 { // 18 digits fit in int64
		return strconv.ParseInt(string(value), 10, 64)
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' { // a fraction or an exponent
			return strconv.ParseInt(string(value), 10, 64)
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(value) {
		n = -n
	}
	return n, nil
}

// plainString returns the end of the JSON string at b[i] when it is plain: printable ASCII
// without escapes.
func plainString(b []byte, i int) (end int, plain bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return 0, false
		}
	}
	return 0, false
}

// validValue returns the end of the JSON value at b[i], and whether it is one that scanUsage can
// vouch for: a plain string (see plainString), a number, true, false, null, or an object or array
// that json.Valid accepts.
func validValue(b []byte, i int) (end int, valid bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return plainString(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	case c == '{' || c == '[':
		end = skipValue(b, i)
		return end, end > i && json.Valid(b[i:end])
	}
	for _, lit := range [...]string{"null", "true", "false"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return 0, false
}

// validNumber returns the end of the JSON number at b[i], and whether it follows JSON's grammar.
func validNumber(b []byte, i int) (end int, valid bool) {
	digits := func(j int) int {
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(i + 1); j > i+1 {
			i = j
		} else {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digits(i); j > i {
			i = j
		} else {
			return 0, false
		}
	}
	return i, true
}

// skipValue returns the end of the JSON value that starts at b[i], or len(b) when b ends before
// it does (a backslash last in b, in a string, included).
func skipValue(b []byte, i int) int {
	depth, inString := 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
				if depth == 0 {
					return i + 1
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return i
		}
	}
	return len(b) // not i: an escape's i++ can take it one past the end
}
