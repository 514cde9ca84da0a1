package usage

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// ErrorOnly reports whether the whole answer was an error object and nothing else: a JSON body
// {"error":{…}} (beside which only Anthropic's "type":"error" may stand), or a stream whose
// data lines are such failures (see failureEvent) and [DONE], at least one of them, after at
// most the events that open a stream before it has produced anything (OpenAI Responses'
// response.created, response.in_progress, response.queued, each without output or usage: see
// openingEvent; a chat stream's chunk of its role alone, and deltas that carry no output: see
// readDelta), with no line left unfinished. Such an answer, though its status said success,
// served nothing: an OpenAI-compatible upstream that reports a failure with 200, a stream that
// fails before its first output. Anything more (a usage object, data, a delta of output, an
// output item, another member, an event after the failure, a body past the first 64 KiB) is not
// one. Call it when the body is complete.
func (s *Sniffer) ErrorOnly() bool {
	if s.SSE {
		return s.errorEvent && !s.notError && !s.skip && len(s.buf) == 0
	}
	return s.head == nil && errorObject(s.buf)
}

// NothingServed reports whether a stream (SSE) has had no event that may have served something:
// none at all, or only the events that open a stream before its first output (see ErrorOnly),
// failures and [DONE] (a data line longer than 256 KiB counts as served; a line the stream
// broke off before its end is no event, as SSE clients drop it). An upstream that breaks such a
// stream off made nothing the client could have. A JSON answer is never one.
func (s *Sniffer) NothingServed() bool { return s.SSE && !s.notError }

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

// eventKind is what a stream's data line says of what the stream served, for ErrorOnly.
type eventKind uint8

const (
	// servedEvent is any event that may have served something (output, usage, anything unknown).
	servedEvent eventKind = iota
	// failureEvent served nothing and ended the answer: an error object (see errorObject), or
	// one of OpenAI Responses' two failing events, {"type":"error","code":…,"message":…,
	// "param":…,"sequence_number":…} (no other member, "message" a string) and
	// {"type":"response.failed",…} whose response has no usage and no output.
	failureEvent
	// openingEvent is one of the events that open an OpenAI Responses stream, before any
	// output: response.created, response.in_progress or response.queued, whose response has no
	// usage and no output (as the reference shows them: "output":[], "usage":null).
	openingEvent
)

// typeBytes is the member name of a typed event; classifyNames are the event types classify
// decodes an event for besides an error (whose type is "error"): a line with none of them is a
// servedEvent, decided without decoding (a Responses stream's output items and deltas).
var (
	typeBytes     = []byte(`"type"`)
	classifyNames = [...][]byte{[]byte(`"response.failed"`), []byte(`"response.created"`),
		[]byte(`"response.in_progress"`), []byte(`"response.queued"`)}
)

// mayClassify reports whether data may be other than a servedEvent, without decoding it.
func mayClassify(data []byte) bool {
	if bytes.Contains(data, errorBytes) {
		return true // an error object, or an event with an error in it
	}
	if !bytes.Contains(data, typeBytes) {
		return false
	}
	for _, name := range classifyNames {
		if bytes.Contains(data, name) {
			return true
		}
	}
	return false
}

// Members that classify reads of a Responses event, and of its response.
var (
	eventFields    = []string{"type", "response"}
	responseFields = []string{"output", "usage"}
)

// classify tells what one data line of a stream is (see eventKind). It is called only for the
// leading lines of a stream, until the first servedEvent (see Sniffer.line): an ordinary stream
// pays for it once or, for a Responses stream, for its two or three opening events, whose members
// are read without allocating (jsonkeys.MembersOf). An event whose type or response member
// repeats or comes in another case (which decoders read differently) is a servedEvent.
func classify(data []byte) eventKind {
	if !mayClassify(data) {
		return servedEvent // the common case, decided without decoding
	}
	var event [2]json.RawMessage
	if jsonkeys.MembersOf(data, eventFields, event[:]) != nil {
		return servedEvent
	}
	switch string(event[0]) {
	case `"response.failed"`:
		if producedNothing(event[1]) {
			return failureEvent
		}
		return servedEvent
	case `"response.created"`, `"response.in_progress"`, `"response.queued"`:
		if producedNothing(event[1]) {
			return openingEvent
		}
		return servedEvent
	}
	if errorObject(data) {
		return failureEvent
	}
	if string(event[0]) != `"error"` {
		return servedEvent
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return servedEvent
	}
	for name, value := range members {
		switch name {
		case "type", "code", "param", "sequence_number":
		case "message":
			if len(value) == 0 || value[0] != '"' {
				return servedEvent
			}
		default:
			return servedEvent
		}
	}
	if members["message"] == nil {
		return servedEvent
	}
	return failureEvent
}

// producedNothing reports whether raw is a Responses response object without output and without
// usage: its output and usage members absent, null or an empty array, neither repeated nor in
// another case.
func producedNothing(raw json.RawMessage) bool {
	var response [2]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || jsonkeys.MembersOf(raw, responseFields, response[:]) != nil {
		return false
	}
	return empty(response[0]) && empty(response[1])
}

// empty reports whether a JSON value is absent, null or an empty array.
func empty(v json.RawMessage) bool {
	s := string(bytes.TrimSpace(v))
	return s == "" || s == "null" || s == "[]" || (len(s) > 1 && s[0] == '[' && strings.TrimSpace(s[1:len(s)-1]) == "")
}
