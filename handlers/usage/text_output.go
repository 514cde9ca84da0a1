package usage

import (
	"encoding/json"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// choicesBytes and textBytes name a legacy completion's chunk (see Sniffer.line), whose output
// is its choices' text, not a delta: {"object":"text_completion","choices":[{"text":"…"}]}.
var (
	choicesBytes = []byte(`"choices"`)
	textBytes    = []byte(`"text"`)
)

// Members readTextChoices reads of a chunk and of each of its choices.
var (
	chunkChoices = []string{"choices"}
	choiceText   = []string{"text"}
)

// readTextChoices tells what one data line of a legacy completion's stream carries, as readDelta
// does for a chat chunk: outputDelta when a choice's text is not empty, emptyDelta when none is
// (the final chunk of a finish reason, "text":""). ok is false when no choice has a text member:
// the line is no legacy chunk (a usage chunk of empty choices), and counts as nothing. A member
// repeated or spelled in another case, or anything else that does not read so, carries output.
func readTextChoices(data []byte) (kind deltaKind, ok bool) {
	var chunk [1]json.RawMessage
	if jsonkeys.MembersOf(data, chunkChoices, chunk[:]) != nil {
		return outputDelta, true
	}
	var choices []json.RawMessage
	if chunk[0] == nil || json.Unmarshal(chunk[0], &choices) != nil {
		return outputDelta, chunk[0] != nil
	}
	kind = emptyDelta
	for _, choice := range choices {
		var text [1]json.RawMessage
		switch err := jsonkeys.MembersOf(choice, choiceText, text[:]); {
		case err != nil:
			return outputDelta, true
		case text[0] == nil:
			continue
		case !emptyValue(text[0]):
			return outputDelta, true
		}
		ok = true
	}
	return kind, ok
}
