package usage

import (
	"bytes"
	"encoding/json"

	"github.com/mediagw/mediagw/handlers/billing"
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
// tokens is what the chunk's output counts for when the stream is cut before its usage counted
// it: a Gemini chunk carries many tokens, not one as a delta of the other providers does, so it
// counts the tokens of its parts' output values as billing estimates text (billing.TokensOf: a
// text's bytes without its quotes; at least one).
//
// Gemini reports, in every chunk before its last, a usageMetadata whose total is its prompt
// (no candidatesTokenCount yet): a stream cut before its last chunk has reported no output, and
// is charged what its chunks carried (see Sniffer.Seen).
func readCandidates(data []byte) (kind deltaKind, tokens int64, ok bool) {
	var chunk [1]json.RawMessage
	if jsonkeys.MembersOf(data, chunkCandidates, chunk[:]) != nil {
		return outputDelta, 1, true
	}
	if chunk[0] == nil {
		return outputDelta, 0, false
	}
	var candidates []json.RawMessage
	if json.Unmarshal(chunk[0], &candidates) != nil {
		return outputDelta, 1, true
	}
	var size int64
	carries := false
	for _, candidate := range candidates {
		n, carry := partsOutput(candidate)
		size += n
		carries = carries || carry
	}
	if !carries {
		return emptyDelta, 0, true
	}
	return outputDelta, max(billing.TokensOf(size), 1), true
}

// partsOutput reads a candidate's content: whether a part carries output (see readCandidates),
// and the bytes of the parts' output values.
func partsOutput(candidate json.RawMessage) (size int64, carries bool) {
	var content, parts [1]json.RawMessage
	if jsonkeys.MembersOf(candidate, candidateContent, content[:]) != nil {
		return int64(len(candidate)), true
	}
	if content[0] == nil || isNull(content[0]) {
		return 0, false
	}
	if jsonkeys.MembersOf(content[0], contentParts, parts[:]) != nil {
		return int64(len(content[0])), true
	}
	if parts[0] == nil || isNull(parts[0]) {
		return 0, false
	}
	var list []json.RawMessage
	if json.Unmarshal(parts[0], &list) != nil {
		return int64(len(parts[0])), true
	}
	for _, part := range list {
		members, err := jsonkeys.All(part, partOutputMembers...)
		if err != nil {
			size, carries = size+int64(len(part)), true
			continue
		}
		for name, value := range members {
			if name != "thought" && name != "thoughtSignature" && !emptyValue(value) {
				size, carries = size+valueBytes(value), true
			}
		}
	}
	return size, carries
}

// valueBytes is the length of a JSON value, without the quotes of a string.
func valueBytes(v []byte) int64 {
	if v = bytes.TrimSpace(v); len(v) >= 2 && v[0] == '"' {
		return int64(len(v) - 2)
	}
	return int64(len(v))
}

// isNull reports whether v, a JSON value, is null.
func isNull(v []byte) bool { return string(bytes.TrimSpace(v)) == "null" }
