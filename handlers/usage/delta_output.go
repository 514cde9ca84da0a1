package usage

import (
	"bytes"
	"encoding/json"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// deltaBytes names a delta event (see Sniffer.line); messageDeltaBytes is the type of
// Anthropic's message_delta event, which carries the stop reason and the usage, and no output.
var (
	deltaBytes        = []byte(`"delta"`)
	messageDeltaBytes = []byte(`"message_delta"`)
)

// deltaKind is what one data line of a stream that names a delta carries.
type deltaKind uint8

const (
	// outputDelta carries output: a token of text, reasoning, a refusal, a tool call's name or
	// arguments. It is also anything that does not read as one of the other two kinds.
	outputDelta deltaKind = iota
	// roleDelta is the chunk that opens OpenAI's chat stream, before the first token: every
	// choice's delta has its role and nothing else but empty members
	// ({"delta":{"role":"assistant","content":"","refusal":null}}).
	roleDelta
	// emptyDelta carries no output and is not a role chunk: a chat chunk whose deltas are empty
	// (the final chunk, {"delta":{},"finish_reason":"stop"}; a chunk of an empty content), a
	// Responses event whose delta is the empty string, Anthropic's message_delta event (its stop
	// reason and usage) and its content block delta of an empty text or partial JSON.
	emptyDelta
)

// Members readDelta reads of a chunk or event, of each choice of a chat chunk, and of a delta.
var (
	chunkFields  = []string{"choices", "delta"}
	choiceFields = []string{"delta"}
	deltaFields  = []string{"role", "type", "content", "refusal"}
	eventType    = []string{"type"}
)

// readDelta tells what data, one data line of a stream that names a delta, carries (see
// deltaKind). A delta carries output when it is a string that is not empty (a Responses event's
// delta: of output text, reasoning, a refusal, a tool call's arguments) or an object with a
// member other than role and type whose value is not empty ("", null, [] or {}): a chat chunk's
// delta (content, refusal, tool_calls, reasoning_content…), Anthropic's content block delta
// (text, thinking, partial_json…; its type names the kind of delta). A chat chunk carries output
// when any of its choices' deltas does. Anthropic's message_delta event carries none: its delta
// is the stop reason. A member repeated or spelled in another case (decoders read those
// differently), a chunk with both choices and a delta, or anything else that does not read so
// carries output.
//
// The common case, a delta whose first member (or the string itself) is output, is decided
// from the bytes after the first "delta" key without decoding; only the others (about two
// chunks a stream: its role chunk and its final one) are decoded.
func readDelta(data []byte) deltaKind {
	if bytes.Contains(data, messageDeltaBytes) && messageDelta(data) {
		return emptyDelta
	}
	if firstMemberIsOutput(data) {
		return outputDelta
	}
	var chunk [2]json.RawMessage
	if jsonkeys.MembersOf(data, chunkFields, chunk[:]) != nil {
		return outputDelta
	}
	switch choices, delta := chunk[0], chunk[1]; {
	case choices != nil && delta != nil, choices == nil && delta == nil:
		return outputDelta
	case delta != nil:
		if output, role := deltaCarries(delta); output || role {
			return outputDelta // an event's delta of its role alone is no chat chunk: output
		}
		return emptyDelta
	default:
		return choicesCarry(choices)
	}
}

// messageDelta reports whether data is Anthropic's message_delta event: its one type member is
// "message_delta".
func messageDelta(data []byte) bool {
	var typ [1]json.RawMessage
	return jsonkeys.MembersOf(data, eventType, typ[:]) == nil && string(typ[0]) == `"message_delta"`
}

// choicesCarry is what the choices of a chat chunk carry (see readDelta): roleDelta when each
// has a delta of its role and nothing else, emptyDelta when none carries output.
func choicesCarry(raw json.RawMessage) deltaKind {
	var choices []json.RawMessage
	if json.Unmarshal(raw, &choices) != nil || len(choices) == 0 {
		return outputDelta
	}
	roles := true
	for _, choice := range choices {
		var delta [1]json.RawMessage
		if jsonkeys.MembersOf(choice, choiceFields, delta[:]) != nil {
			return outputDelta
		}
		if delta[0] == nil {
			roles = false // a choice of its finish_reason alone
			continue
		}
		output, role := deltaCarries(delta[0])
		if output {
			return outputDelta
		}
		roles = roles && role
	}
	if roles {
		return roleDelta
	}
	return emptyDelta
}

// deltaCarries reads one delta: whether it carries output, and whether it has a role (which is
// no output, nor is the type of an Anthropic delta).
func deltaCarries(raw json.RawMessage) (output, role bool) {
	if v := bytes.TrimSpace(raw); len(v) > 0 && v[0] != '{' {
		return !emptyValue(v), false
	}
	members, err := jsonkeys.All(raw, deltaFields...)
	if err != nil {
		return true, false
	}
	for name, value := range members {
		if name == "role" {
			role = true
		} else if name != "type" && !emptyValue(value) {
			return true, role
		}
	}
	return false, role
}

// emptyValue reports whether v, a JSON value, is "", null, [] or {}.
func emptyValue(v []byte) bool {
	v = bytes.TrimSpace(v)
	switch {
	case string(v) == "null" || string(v) == `""`:
		return true
	case len(v) >= 2 && (v[0] == '[' && v[len(v)-1] == ']' || v[0] == '{' && v[len(v)-1] == '}'):
		return len(bytes.TrimSpace(v[1:len(v)-1])) == 0
	}
	return false
}

// firstMemberIsOutput reports, without decoding, whether the first "delta" key of data has a
// value that carries output by its first bytes: a string that is not empty, or an object whose
// first member (after a role, which some upstreams send in every chunk, or the type of an
// Anthropic delta) is not empty. It answers false whenever it is not sure, for readDelta to
// decode data.
func firstMemberIsOutput(data []byte) bool {
	i := bytes.Index(data, deltaBytes)
	if i < 0 {
		return false
	}
	i = colonAfter(data, i+len(deltaBytes))
	if i < 0 {
		return false // "delta" as a value, not a key
	}
	if data[i] != '{' {
		return valueCarries(data, i)
	}
	i = jsonkeys.SkipSpace(data, i+1)
	for range 2 {
		key, value := unescapedString(data, i)
		if key == nil {
			return false // {}, an escaped key, or no object
		}
		if value = colonAfter(data, value); value < 0 {
			return false
		}
		if string(key) != "role" && string(key) != "type" {
			return valueCarries(data, value)
		}
		// The role or the type, a plain string, then the next member.
		role, next := unescapedString(data, value)
		if role == nil {
			return false
		}
		if next = jsonkeys.SkipSpace(data, next); next >= len(data) || data[next] != ',' {
			return false
		}
		i = jsonkeys.SkipSpace(data, next+1)
	}
	return false
}

// unescapedString is the content of the string that starts (with its quote) at data[i], and the
// index after its closing quote; nil when there is none there, or it holds an escape.
func unescapedString(data []byte, i int) ([]byte, int) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0
	}
	end := bytes.IndexByte(data[i+1:], '"')
	if end < 0 || bytes.IndexByte(data[i+1:i+1+end], '\\') >= 0 {
		return nil, 0
	}
	return data[i+1 : i+1+end], i + end + 2
}

// valueCarries reports, by its first bytes, whether the value at data[i] is a string, an array
// or an object that is not empty; false for anything else (null, a number, a literal), which
// readDelta decodes.
func valueCarries(data []byte, i int) bool {
	switch data[i] {
	case '"':
		return i+1 < len(data) && data[i+1] != '"'
	case '[', '{':
		j := jsonkeys.SkipSpace(data, i+1)
		return j < len(data) && data[j] != ']' && data[j] != '}'
	}
	return false
}

// colonAfter is the index of the value after the colon that follows a key ending before i
// (white space skipped around the colon), or -1 when there is none.
func colonAfter(data []byte, i int) int {
	i = jsonkeys.SkipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	if i = jsonkeys.SkipSpace(data, i+1); i >= len(data) {
		return -1
	}
	return i
}
