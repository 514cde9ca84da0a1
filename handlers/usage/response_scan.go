package usage

import "bytes"

// responseScan reads one JSON value of a Responses answer byte by byte, as it streams by,
// without holding it: a whole response (a JSON answer), or the data of one stream event. It
// keeps only what prices the images of an image_generation tool: the response's status, its
// image_generation_call output items (type, status, id, size, quality, and whether the item has
// a result), and an event's type, item_id, size, quality and item. Strings it does not keep (a
// result's megabytes of base64) are skipped with one search for their end, not decoded. The
// names and values it keeps have their escapes decoded, so that they read as a JSON decoder
// reads them.
type responseScan struct {
	// event is set for a stream event's data, whose top level names the event (type, item_id,
	// item, response …); otherwise the top level is a response.
	event  bool
	frames [maxScanDepth]scanFrame
	depth  int // open objects and arrays, however deep
	opened bool

	inString  bool
	isKey     bool // the string being read is a member name
	keep      bool // its bytes are kept (a name, or a value read here)
	esc       int  // 0; 1 after a backslash; 2 to 5 while reading \u's hex digits
	hex       rune
	str       [maxScanString]byte
	strLen    int // the string's length so far, past len(str) when too long to keep
	malformed bool

	status string // the response's
	// own is an event's own members: its type, item_id (as id), size and quality.
	own          toolCall
	item         toolCall // the item being read
	eventItem    toolCall // an event's item (output_item.added, .done)
	hasEventItem bool
	output       []toolCall // the response's image_generation_call items
}

// toolCall is an output item of a response as far as it prices an image.
type toolCall struct {
	typ, status, id, size, quality string
	result                         bool // a non-empty result
}

// Bounds of responseScan.
const (
	maxScanDepth  = 8
	maxScanString = 64 // past the longest event type read
	// maxToolCalls bounds the image_generation_call items kept of one answer; more are not
	// charged.
	maxToolCalls = 4096
)

// imageGenerationCall is the type of the output item of an image_generation tool call.
const imageGenerationCall = "image_generation_call"

type scanRole uint8

const (
	roleOther    scanRole = iota
	roleEvent             // an event's top level
	roleResponse          // a response: the answer's top level, or an event's response
	roleOutput            // a response's output array
	roleItem              // an output item: in a response's output, or an event's item
)

type scanKey uint8

const (
	keyOther scanKey = iota
	keyType
	keyStatus
	keySize
	keyQuality
	keyID
	keyItemID
	keyResult
	keyItem
	keyResponse
	keyOutput
)

var scanKeys = map[string]scanKey{"type": keyType, "status": keyStatus, "size": keySize, "quality": keyQuality,
	"id": keyID, "item_id": keyItemID, "result": keyResult, "item": keyItem, "response": keyResponse, "output": keyOutput}

// scanFrame is one open object or array.
type scanFrame struct {
	role      scanRole
	object    bool
	expectKey bool    // an object's next string is a member name
	key       scanKey // the name of the object's member being read
}

// top is the innermost open frame, nil at the top level or deeper than maxScanDepth.
func (s *responseScan) top() *scanFrame {
	if s.depth == 0 || s.depth > maxScanDepth {
		return nil
	}
	return &s.frames[s.depth-1]
}

// complete reports whether one whole JSON object or array was read, and nothing broke it.
func (s *responseScan) complete() bool {
	return s.opened && s.depth == 0 && !s.inString && !s.malformed
}

// Write reads p; it never fails.
func (s *responseScan) Write(p []byte) {
	for i := 0; i < len(p); i++ {
		b := p[i]
		if s.inString {
			if !s.keep && s.esc == 0 {
				j := bytes.IndexAny(p[i:], `"\`)
				if j < 0 {
					s.strLen += len(p) - i
					return
				}
				s.strLen += j
				i += j
				b = p[i]
			}
			s.stringByte(b)
			continue
		}
		switch b {
		case '"':
			f := s.top()
			s.inString, s.strLen, s.esc = true, 0, 0
			s.isKey = f != nil && f.object && f.expectKey
			s.keep = s.isKey || f != nil && f.object && s.kept(f)
		case ',':
			if f := s.top(); f != nil && f.object {
				f.expectKey, f.key = true, keyOther
			}
		case '{', '[':
			s.open(b == '{')
		case '}', ']':
			if s.depth == 0 {
				s.malformed = true
				continue
			}
			if f := s.top(); f != nil && f.role == roleItem {
				s.endItem()
			}
			s.depth--
		}
	}
}

// open opens an object or array, naming its role from where it stands.
func (s *responseScan) open(object bool) {
	role := roleOther
	switch parent := s.top(); {
	case s.depth == 0 && s.opened:
		s.malformed = true // a second value
	case s.depth == 0 && s.event:
		role = roleEvent
	case s.depth == 0:
		role = roleResponse
	case parent == nil:
	case parent.role == roleEvent && object && parent.key == keyItem:
		role = roleItem
	case parent.role == roleEvent && object && parent.key == keyResponse:
		role = roleResponse
	case parent.role == roleResponse && !object && parent.key == keyOutput:
		role = roleOutput
	case parent.role == roleOutput && object:
		role = roleItem
	}
	if role == roleItem {
		s.item = toolCall{}
	}
	s.depth++
	s.opened = true
	if f := s.top(); f != nil {
		*f = scanFrame{role: role, object: object, expectKey: object}
	}
}

// kept reports whether the value of f's current member is a string read here.
func (s *responseScan) kept(f *scanFrame) bool {
	switch f.role {
	case roleEvent:
		return f.key == keyType || f.key == keyItemID || f.key == keySize || f.key == keyQuality
	case roleResponse:
		return f.key == keyStatus
	case roleItem:
		return f.key != keyOther && f.key != keyResult // a result only counts its length
	}
	return false
}

// stringByte reads one byte of a string, decoding escapes.
func (s *responseScan) stringByte(b byte) {
	switch {
	case s.esc == 1:
		s.esc = 0
		switch b {
		case 'u':
			s.esc, s.hex = 2, 0
		case 'b', 'f', 'n', 'r', 't':
			s.put(0) // no name or value read here holds a control character
		default:
			s.put(b) // \" \\ \/
		}
	case s.esc >= 2:
		s.hex = s.hex<<4 | hexDigit(b)
		if s.esc++; s.esc == 6 {
			s.esc = 0
			if s.hex < 0x80 {
				s.put(byte(s.hex))
			} else {
				s.put(0) // not ASCII: no name or value read here
			}
		}
	case b == '\\':
		s.esc = 1
	case b == '"':
		s.endString()
	default:
		s.put(b)
	}
}

func hexDigit(b byte) rune {
	switch {
	case b >= '0' && b <= '9':
		return rune(b - '0')
	case b >= 'a' && b <= 'f':
		return rune(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return rune(b-'A') + 10
	}
	return 0x10000 // not a hex digit: the character is not ASCII
}

func (s *responseScan) put(b byte) {
	if s.strLen < len(s.str) && s.keep {
		s.str[s.strLen] = b
	}
	s.strLen++
}

// endString ends a string: a member name names the member, a value read here is kept.
func (s *responseScan) endString() {
	s.inString = false
	f := s.top()
	if f == nil || !f.object {
		return
	}
	text := ""
	if s.keep && s.strLen <= len(s.str) {
		text = string(s.str[:s.strLen])
	}
	if s.isKey {
		f.key, f.expectKey = scanKeys[text], false
		return
	}
	switch f.role {
	case roleEvent:
		s.own.set(f.key, text, s.strLen)
	case roleResponse:
		if f.key == keyStatus {
			s.status = text
		}
	case roleItem:
		s.item.set(f.key, text, s.strLen)
	}
}

// set keeps the value of a member: a name's text, and of a result its length.
func (c *toolCall) set(key scanKey, text string, length int) {
	switch key {
	case keyType:
		c.typ = text
	case keyStatus:
		c.status = text
	case keyID, keyItemID:
		c.id = text
	case keySize:
		c.size = text
	case keyQuality:
		c.quality = text
	case keyResult:
		c.result = length > 0
	}
}

// endItem ends an output item: an image_generation_call of a response's output is kept, and an
// event's item is its item.
func (s *responseScan) endItem() {
	if s.depth >= 2 && s.frames[s.depth-2].role == roleEvent {
		s.eventItem, s.hasEventItem = s.item, true
		return
	}
	if s.item.typ == imageGenerationCall && len(s.output) < maxToolCalls {
		s.output = append(s.output, s.item)
	}
}

// made reports whether an image_generation_call item made its image: its status is completed,
// or it reports no status and carries a result.
func (c toolCall) made() bool {
	return c.typ == imageGenerationCall && (c.status == "completed" || c.status == "" && c.result)
}
