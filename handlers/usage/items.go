package usage

// DataItems counts the elements of the top-level "data" array of a JSON answer as it streams
// by, without holding the body: an image answer's images (`{"created":…,"data":[{…},{…}]}`),
// however large their b64_json. It reads every byte once and keeps a few bytes of state.
type DataItems struct {
	depth     int
	inString  bool
	escaped   bool
	key       [5]byte // the first bytes of the string being read at depth 1
	keyLen    int     // its length so far (past len(key): not "data")
	keyIsData bool    // the last string closed at depth 1 was "data"
	afterData bool    // a ':' followed that key: the next value is data's
	inData    bool    // inside data's array (depth 2)
	expect    bool    // inside data's array, a value may start here
	seen      bool    // data's array began
	n         int64
}

// Count is the number of elements of the top-level "data" array seen so far, and whether the
// array was seen at all (an answer without one, such as a task id or an error, is not a count
// of 0).
func (c *DataItems) Count() (n int64, seen bool) { return c.n, c.seen }

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
			c.inString, c.keyLen = true, 0
		case ':':
			c.afterData = c.depth == 1 && c.keyIsData
		case ',':
			c.keyIsData, c.afterData = false, false
			if c.inData && c.depth == 2 {
				c.expect = true
			}
		case '{', '[':
			c.depth++
			if b == '[' && c.depth == 2 && c.afterData {
				c.inData, c.expect, c.seen = true, true, true
			}
			c.afterData = false
		case '}', ']':
			if c.inData && c.depth == 2 {
				c.inData = false
			}
			c.depth--
		}
	}
}

// stringByte reads one byte inside a string, noting the key it spells at depth 1.
func (c *DataItems) stringByte(b byte) {
	switch {
	case c.escaped:
		c.escaped = false
		c.keyLen = len(c.key) + 1 // an escaped key is not the plain "data"
	case b == '\\':
		c.escaped = true
	case b == '"':
		c.inString = false
		if c.depth == 1 {
			c.keyIsData = c.keyLen == 4 && string(c.key[:4]) == "data"
		}
	default:
		if c.depth == 1 && c.keyLen < len(c.key) {
			c.key[c.keyLen] = b
		}
		c.keyLen++
	}
}
