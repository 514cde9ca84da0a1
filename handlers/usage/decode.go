package usage

import (
	"encoding/json"
	"strconv"
	"strings"
)

// usageFields are rawUsage's JSON names, in the order of its fields.
var usageFields = [...]string{"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens",
	"output_tokens", "promptTokenCount", "candidatesTokenCount", "totalTokenCount", "thoughtsTokenCount"}

// decodeUsage decodes a usage object exactly as json.Unmarshal into a rawUsage does, and reports
// whether that succeeded. Objects with ASCII member names and no escapes in them (every
// provider's) are read by a small scanner after json.Valid, without reflection; anything else goes
// to json.Unmarshal.
func decodeUsage(obj []byte) (rawUsage, bool) {
	var u rawUsage
	if !json.Valid(obj) {
		return u, false
	}
	if ok, decided := scanUsage(obj, &u); decided {
		return u, ok
	}
	u = rawUsage{}
	return u, json.Unmarshal(obj, &u) == nil
}

// scanUsage reads valid JSON obj into u. decided is false when a member name has an escape or a
// non-ASCII byte (whose case folding json.Unmarshal does its own way); otherwise ok is what
// json.Unmarshal would report: a known member (matched without regard to ASCII case) must be
// null or an integer that fits int64.
func scanUsage(obj []byte, u *rawUsage) (ok, decided bool) {
	targets := [...]**int64{&u.PromptTokens, &u.CompletionTokens, &u.TotalTokens, &u.InputTokens,
		&u.OutputTokens, &u.PromptTokenCount, &u.CandidatesTokenCount, &u.TotalTokenCount, &u.ThoughtsTokenCount}
	if len(obj) == 0 || obj[0] != '{' {
		return false, false
	}
	ok = true
	i := skipSpace(obj, 1)
	if i < len(obj) && obj[i] == '}' {
		return true, true
	}
	for i < len(obj) && obj[i] == '"' {
		start := i + 1
		end := start
		for end < len(obj) && obj[end] != '"' {
			if obj[end] == '\\' || obj[end] >= 0x80 {
				return false, false
			}
			end++
		}
		name := string(obj[start:end])
		i = skipSpace(obj, skipSpace(obj, end+1)+1) // past the closing quote, the colon
		field := -1
		for f, known := range usageFields {
			if strings.EqualFold(name, known) {
				field = f
				break
			}
		}
		valueEnd := skipValue(obj, i)
		if field >= 0 {
			switch value := obj[i:valueEnd]; {
			case string(value) == "null":
				*targets[field] = nil // as json.Unmarshal sets a pointer
			case value[0] == '-' || value[0] >= '0' && value[0] <= '9':
				n, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil {
					ok = false // json.Unmarshal goes on, and then fails
				} else {
					*targets[field] = &n
				}
			default:
				ok = false
			}
		}
		i = skipSpace(obj, valueEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return ok, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the end of the valid JSON value that starts at b[i].
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
	return i
}
