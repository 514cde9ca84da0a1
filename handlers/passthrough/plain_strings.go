package passthrough

import (
	"unicode/utf8"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// plainStrings reads the strings of the valid JSON body in one pass, for checkBodyRefs. plain
// reports that checkFetchedURLs' walk would find nothing in it: no string, key or value, that
// media.MayBeURL could take for a URL (none holds ':', '/' or '\\', or begins with a space, a
// control byte or a byte past ASCII), and no container nested deeper than the walk goes
// (jsonkeys.MaxWalkDepth). A chat body of plain messages is such a body. plainStrings may say
// false of a body whose walk finds nothing, which only costs the walk.
//
// When plain, hint is keyHint(body, words...): in valid JSON, every byte that keyHint looks at
// (a '\\', a ſ, a '_') is inside a string, whose quotes are the quotes that keyHint reads, so one
// pass answers both. When not plain, hint is false: ask keyHint.
func plainStrings(body []byte, words []string) (plain, hint bool) {
	lengths := wordLengths(words)
	open, quote := 0, -1 // the containers open at i; the last quote before i
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case !structural[c]:
			// white space, numbers, literals, ',' and ':'
		case c == '"':
			// The text between the last quote and this one (a colon, a comma), then the string.
			hint = hint || quote >= 0 && quotedWord(body, quote, i, lengths, words)
			quote = i
			if i+1 < len(body) && (body[i+1] <= ' ' || body[i+1] >= utf8.RuneSelf) {
				return false, false
			}
			for i++; i < len(body); i++ {
				c := body[i]
				if !inPlainString[c] {
					continue
				}
				if c == '"' {
					break
				}
				switch c {
				case '_':
					hint = hint || underscoreHint(body, i)
				case longS[0]:
					hint = hint || i+1 < len(body) && body[i+1] == longS[1]
				default: // ':', '/', '\\'
					return false, false
				}
			}
			hint = hint || quotedWord(body, quote, i, lengths, words)
			quote = i
		case c == '{' || c == '[':
			if open++; open > jsonkeys.MaxWalkDepth {
				return false, false
			}
		default: // '}', ']'
			open--
		}
	}
	return true, hint
}

// structural are the bytes of JSON text that plainStrings stops at outside strings; inPlainString
// those it stops at inside a string: its closing quote, the bytes for which media.MayBeURL reads
// a string as a URL wherever they are, and those that keyHint looks for.
var structural, inPlainString = byteSet(`"{}[]`), byteSet(`":/\\_` + "\xc5")

func byteSet(bytes string) (set [256]bool) {
	for i := range len(bytes) {
		set[bytes[i]] = true
	}
	return set
}
