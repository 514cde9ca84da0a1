package usage

import (
	"bytes"
	"encoding/json"
	"strings"
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

// errorEvent reports whether an SSE data line served nothing: an error object (see
// errorObject), or one of the two OpenAI Responses stream events that end a stream without an
// answer: {"type":"error","code":…,"message":…,"param":…,"sequence_number":…} (no other
// member, "message" a string) and {"type":"response.failed",…} whose response has no usage
// and no output. A response.failed that carries usage or output is billed from it as any event.
func errorEvent(data []byte) bool {
	if errorObject(data) {
		return true
	}
	if !bytes.Contains(data, []byte(`"type"`)) {
		return false // the common case, decided without decoding
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return false
	}
	switch string(members["type"]) {
	case `"error"`:
		for name, value := range members {
			switch name {
			case "type", "code", "param", "sequence_number":
			case "message":
				if len(value) == 0 || value[0] != '"' {
					return false
				}
			default:
				return false
			}
		}
		return members["message"] != nil
	case `"response.failed"`:
		var response map[string]json.RawMessage
		if json.Unmarshal(members["response"], &response) != nil || response == nil {
			return false
		}
		return empty(response["usage"]) && empty(response["output"])
	}
	return false
}

// empty reports whether a JSON value is absent, null or an empty array.
func empty(v json.RawMessage) bool {
	s := string(bytes.TrimSpace(v))
	return s == "" || s == "null" || s == "[]" || (len(s) > 1 && s[0] == '[' && strings.TrimSpace(s[1:len(s)-1]) == "")
}
