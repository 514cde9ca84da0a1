package usage

import (
	"bytes"
	"encoding/json"
)

// ErrorOnly reports whether the whole answer was an error object and nothing else: a JSON body
// {"error":{…}} (beside which only Anthropic's "type":"error" may stand), or a stream whose every
// data line is one (and [DONE]), with at least one such line and no line left unfinished. Such
// an answer, though its status said success, served nothing: an OpenAI-compatible upstream
// that reports a failure with 200, a stream that fails before its first event. Anything more
// (a usage object, data, a delta, another member, a body past the first 64 KiB) is not one.
// Call it when the body is complete.
func (s *Sniffer) ErrorOnly() bool {
	if s.SSE {
		return s.errorEvents > 0 && !s.notError && !s.skip && len(s.buf) == 0
	}
	return s.head == nil && errorObject(s.buf)
}

// errorBytes is the member name every error object has.
var errorBytes = []byte(`"error"`)

// errorObject reports whether b is a JSON object whose members are "error", an object, and at
// most "type" with the value "error" besides (names matched exactly: "Error" is another member,
// which some decoders would read as error and others not, so it is not an error object).
func errorObject(b []byte) bool {
	if !bytes.Contains(b, errorBytes) {
		return false // the common case, decided without decoding
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(b, &members) != nil || len(members) == 0 || len(members) > 2 {
		return false
	}
	for name, value := range members {
		switch {
		case name == "error" && len(value) > 0 && value[0] == '{':
		case name == "type" && string(value) == `"error"`:
		default:
			return false
		}
	}
	return members["error"] != nil
}
