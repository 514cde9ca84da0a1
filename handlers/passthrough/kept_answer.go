package passthrough

import "bytes"

// maxKeptString is the longest string of a retrieve's answer that keptAnswer keeps.
const maxKeptString = 4 << 10

// keptAnswer keeps what a retrieve's answer says of the object's end, as the answer streams by:
// the JSON text with each string longer than maxKeptString bytes (an image's b64_json, which an
// image task's answer may carry by the megabyte) emptied to "", every member, its order and
// every shorter value as they came, at most maxStatusAnswer bytes of it. So the status, the data
// items and the size an answer reports are read whatever the size of its images, by the same
// rules as a short answer (answerStatus, ImageTaskReported).
type keptAnswer struct {
	buf      bytes.Buffer
	inString bool
	escaped  bool
	str      []byte // the string being read, from its opening quote, until it is too long
	long     bool   // the string being read is longer than maxKeptString: emptied
	full     bool   // maxStatusAnswer bytes are kept: the rest is not
}

// Write reads p; it never fails.
func (k *keptAnswer) Write(p []byte) {
	for _, b := range p {
		if !k.inString {
			if b == '"' {
				k.inString, k.long, k.str = true, false, append(k.str[:0], b)
				continue
			}
			k.keep(b)
			continue
		}
		if !k.long {
			k.str = append(k.str, b)
			if len(k.str) > maxKeptString+2 { // the quotes and more than maxKeptString bytes
				k.long = true
			}
		}
		switch {
		case k.escaped:
			k.escaped = false
		case b == '\\':
			k.escaped = true
		case b == '"':
			k.inString = false
			if k.long {
				k.keep('"', '"')
			} else {
				k.keep(k.str...)
			}
		}
	}
}

// keep adds bytes to what is kept, up to maxStatusAnswer: from the first that does not fit on,
// nothing more is kept.
func (k *keptAnswer) keep(b ...byte) {
	if k.full {
		return
	}
	if room := maxStatusAnswer - k.buf.Len(); len(b) > room {
		k.buf.Write(b[:room])
		k.full = true
		return
	}
	k.buf.Write(b)
}

// Bytes is what was kept.
func (k *keptAnswer) Bytes() []byte { return k.buf.Bytes() }

// WriteString reads s (Write).
func (k *keptAnswer) WriteString(s string) { k.Write([]byte(s)) }
