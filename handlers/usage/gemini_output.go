package usage

import (
	"bytes"
	"encoding/json"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// candidatesBytes names a Gemini stream's chunk (a GenerateContentResponse), whose output is in
// its candidates (see Sniffer.line).
var candidatesBytes = []byte(`"candidates"`)

// Members readCandidates reads of a chunk, a candidate, its content, and a part.
var (
	chunkCandidates   = []string{"candidates"}
	candidateContent  = []string{"content"}
	contentParts      = []string{"parts"}
	partOutputMembers = []string{"text", "thought", "thoughtSignature"}
)

// readCandidates tells what one data line of a Gemini stream carries, as readDelta does for the
// other providers' deltas: outputDelta when a part of a candidate's content is not empty (a text
// that is not "", a thought's text, which Gemini bills as output, a function call, inline data,
// code…), emptyDelta when none is (no candidate, no content or parts, parts of an empty text or
// of a thought signature alone: the last chunk of a finish reason and the usage). ok is false
// when data has no candidates member: it is no Gemini chunk, and counts as nothing. A member
// repeated or spelled in another case (decoders read those differently), or anything else that
// does not read so, carries output.
//
// Gemini reports, in every chunk before its last, a usageMetadata whose total is its prompt
// (no candidatesTokenCount yet): a stream cut before its last chunk has reported no output, and
// is charged one token a chunk that carried some (see Sniffer.Seen).
func readCandidates(data []byte) (kind deltaKind, ok bool) {
	var chunk [1]json.RawMessage
	if jsonkeys.MembersOf(data, chunkCandidates, chunk[:]) != nil {
		return outputDelta, true
	}
	if chunk[0] == nil {
		return outputDelta, false
	}
	var candidates []json.RawMessage
	if json.Unmarshal(chunk[0], &candidates) != nil {
		return outputDelta, true
	}
	for _, candidate := range candidates {
		if partsCarry(candidate) {
			return outputDelta, true
		}
	}
	return emptyDelta, true
}

// partsCarry reports whether a candidate's content has a part that carries output (see
// readCandidates).
func partsCarry(candidate json.RawMessage) bool {
	var content, parts [1]json.RawMessage
	if jsonkeys.MembersOf(candidate, candidateContent, content[:]) != nil {
		return true
	}
	if content[0] == nil || isNull(content[0]) {
		return false
	}
	if jsonkeys.MembersOf(content[0], contentParts, parts[:]) != nil {
		return true
	}
	if parts[0] == nil || isNull(parts[0]) {
		return false
	}
	var list []json.RawMessage
	if json.Unmarshal(parts[0], &list) != nil {
		return true
	}
	for _, part := range list {
		members, err := jsonkeys.All(part, partOutputMembers...)
		if err != nil {
			return true
		}
		for name, value := range members {
			if name != "thought" && name != "thoughtSignature" && !emptyValue(value) {
				return true
			}
		}
	}
	return false
}

// isNull reports whether v, a JSON value, is null.
func isNull(v []byte) bool { return string(bytes.TrimSpace(v)) == "null" }
