package usage

import "strings"

// DataItems counts the elements of the top-level "data" array of a JSON answer as it streams
// by, without holding the body: an image answer's images (`{"created":…,"data":[{…},{…}]}`),
// however large their b64_json. It also keeps the top-level "quality" and "size" strings that
// OpenAI's gpt-image answers report (`"quality":"high","size":"1024x1536"`), and the "type"
// string of a streamed image event (see ImageEvents), and the top-level "status" of an image
// task's answer. It reads every byte once and keeps a few bytes of state.
type DataItems struct {
	depth    int
	inString bool
	escaped  bool
	str      [maxType]byte // the first bytes of the string being read at depth 1
	strLen   int           // its length so far (past len(str), or escaped: no name or value kept)
	strEsc   bool          // the string being read has an escape
	lastKey  topMember     // the member the last key closed at depth 1 names
	value    topMember     // after that key's ':': the member whose value comes next
	inValue  bool          // the string being read at depth 1 is a value, not a key
	colon    bool          // at depth 1, a ':' was read since the last key: a value comes
	array    bool          // the answer is a JSON array: its strings at depth 1 are values
	inData   bool          // inside data's array (depth 2)
	expect   bool          // inside data's array, a value may start here
	seen     bool          // data's array began
	opened   bool          // an object or array began
	n        int64
	quality  string
	size     string
	typ      string
	status   string
	// keys are the members read whose key was seen at depth 1; ambiguous is set by one seen
	// twice, by a key that differs from one of them only by letter case, and by an escaped key.
	keys      uint8
	ambiguous bool
}

// maxReported bounds the quality and size strings kept, and maxType the type string; longer
// ones are not reported values.
const (
	maxReported = 16
	maxType     = 40 // image_generation.partial_succeeded (Ark's) is 34
)

// topMember is a top-level member DataItems reads.
type topMember uint8

const (
	memberOther topMember = iota
	memberData
	memberQuality
	memberSize
	memberType
	memberStatus
)

// memberNames are the keys of the members DataItems reads, by topMember.
var memberNames = [...]string{memberData: "data", memberQuality: "quality", memberSize: "size", memberType: "type", memberStatus: "status"}

// Count is the number of elements of the top-level "data" array seen so far, and whether the
// array was seen at all (an answer without one, such as a task id or an error, is not a count
// of 0).
func (c *DataItems) Count() (n int64, seen bool) { return c.n, c.seen }

// Reported is the top-level "size" and "quality" strings of the answer, the last of each, ""
// when absent, not a plain string, or longer than 16 bytes. They are the provider's word, to be
// checked before use (billing.AnswerImage).
func (c *DataItems) Reported() (size, quality string) { return c.size, c.quality }

// Type is the top-level "type" string of the answer (the last one), "" when absent, not a plain
// string, or longer than 40 bytes.
func (c *DataItems) Type() string { return c.typ }

// Status is the top-level "status" string of the answer (an image task's), "" when absent, not a
// plain string, or longer than 40 bytes.
func (c *DataItems) Status() string { return c.status }

// Ambiguous reports whether a top-level key of the answer makes the members read unclear:
// data, quality, size, type or status seen twice, a key that differs from one of them only by
// letter case ("Status"), or a key written with an escape, which may spell one of them. (Other
// keys repeated are not checked: jsonkeys.Members holds a whole answer to that rule.)
func (c *DataItems) Ambiguous() bool { return c.ambiguous }

// Complete reports whether the answer read so far is one whole JSON object or array (its
// closing bracket seen, no string left open).
func (c *DataItems) Complete() bool { return c.opened && c.depth == 0 && !c.inString }

// Write reads p; it never fails.
func (c *DataItems) Write(p []byte) {
	for _, b := range p {
		if c.inString {
			c.stringByte(b)
			continue
		}
		if c.inData && c.depth == 2 && c.expect && b != ' ' && b != '\t' && b != '\r' && b != '\n' && b != ']' && b != ',' {
			c.n++
			c.expect = false
		}
		switch b {
		case '"':
			c.inString, c.strLen, c.strEsc = true, 0, false
			c.inValue = c.depth == 1 && (c.colon || c.array)
		case ':':
			if c.depth == 1 {
				c.value, c.colon = c.lastKey, true
			}
		case ',':
			c.lastKey, c.value = memberOther, memberOther
			if c.depth == 1 {
				c.colon = false
			}
			if c.inData && c.depth == 2 {
				c.expect = true
			}
		case '{', '[':
			if c.depth == 0 {
				c.array = b == '['
			}
			c.depth++
			c.opened = true
			if b == '[' && c.depth == 2 && c.value == memberData {
				c.inData, c.expect, c.seen = true, true, true
			}
			c.value = memberOther
		case '}', ']':
			if c.inData && c.depth == 2 {
				c.inData = false
			}
			c.depth--
		default:
			if c.depth == 1 && b != ' ' && b != '\t' && b != '\r' && b != '\n' {
				c.value = memberOther // a number, true, false or null
			}
		}
	}
}

// stringByte reads one byte inside a string, noting the key or the value it spells at depth 1.
func (c *DataItems) stringByte(b byte) {
	switch {
	case c.escaped:
		c.escaped = false
		c.strLen = len(c.str) + 1 // an escaped string is not a plain name or value
		c.strEsc = true
	case b == '\\':
		c.escaped = true
	case b == '"':
		c.inString = false
		if c.depth != 1 {
			return
		}
		plain := c.strLen <= len(c.str)
		text := c.str[:min(c.strLen, len(c.str))]
		if !c.inValue {
			c.lastKey = c.key(plain, text)
			return
		}
		value := ""
		if plain {
			value = string(text)
		}
		reported := value
		if len(reported) > maxReported {
			reported = ""
		}
		switch c.value {
		case memberQuality:
			c.quality = reported
		case memberSize:
			c.size = reported
		case memberType:
			c.typ = value
		case memberStatus:
			c.status = value
		}
		c.value, c.inValue = memberOther, false
	default:
		if c.depth == 1 && c.strLen < len(c.str) {
			c.str[c.strLen] = b
		}
		c.strLen++
	}
}

// key is the member that a key closed at depth 1 names, noting an ambiguous one (see Ambiguous).
func (c *DataItems) key(plain bool, text []byte) topMember {
	if c.strEsc {
		c.ambiguous = true
		return memberOther
	}
	if !plain {
		return memberOther // longer than any of memberNames, in any case
	}
	key := string(text)
	for m, name := range memberNames {
		switch {
		case name == "" || !strings.EqualFold(key, name):
		case key != name:
			c.ambiguous = true
		case c.keys&(1<<m) != 0:
			c.ambiguous = true
			return topMember(m)
		default:
			c.keys |= 1 << m
			return topMember(m)
		}
	}
	return memberOther
}
