package usage

import (
	"bytes"
	"encoding/json"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// roleBytes is the member name that roleOnly looks for before decoding; deltaBytes names a
// delta event (see Sniffer.line).
var (
	roleBytes  = []byte(`"role"`)
	deltaBytes = []byte(`"delta"`)
)

// Members roleOnly reads of a chat completion chunk, of each of its choices, and of a delta.
var (
	chunkFields  = []string{"choices"}
	choiceFields = []string{"delta"}
	deltaFields  = []string{"role", "content", "refusal"}
)

// roleOnly reports whether data, one data line of a stream, is a chat completion chunk that
// carries no output: every choice's delta has its role and nothing else but an empty or null
// content or refusal. OpenAI opens every chat stream with such a chunk
// ({"delta":{"role":"assistant","content":"","refusal":null}}) before the first token, so it is
// neither an output token nor output served. The caller has seen that data names a delta; only
// one that names a role too is decoded (about one per stream). A member repeated or spelled in
// another case, any other member of a delta, or anything that does not read so is output.
func roleOnly(data []byte) bool {
	if !bytes.Contains(data, roleBytes) {
		return false // the common case (a delta of output), decided without decoding
	}
	var chunk [1]json.RawMessage
	if jsonkeys.MembersOf(data, chunkFields, chunk[:]) != nil {
		return false
	}
	var choices []json.RawMessage
	if json.Unmarshal(chunk[0], &choices) != nil || len(choices) == 0 {
		return false
	}
	for _, choice := range choices {
		var delta [1]json.RawMessage
		if jsonkeys.MembersOf(choice, choiceFields, delta[:]) != nil || delta[0] == nil {
			return false
		}
		members, err := jsonkeys.All(delta[0], deltaFields...)
		if err != nil || members["role"] == nil {
			return false
		}
		for name, value := range members {
			switch name {
			case "role":
			case "content", "refusal":
				if v := string(bytes.TrimSpace(value)); v != `""` && v != "null" {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}
