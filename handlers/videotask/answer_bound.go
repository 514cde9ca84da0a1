package videotask

import (
	"encoding/json"
	"iter"
	"maps"
	"slices"
)

// What a task record keeps of an upstream's answer. The record is rewritten at each change of
// the task and read at every poll, and an upstream's answer may be up to upstream.MaxBody (4 MiB)
// long: what the answer carries beyond the contract's members (spec §2.5) is bounded, so that a
// broken or hostile upstream cannot fill the store, nor make every poll of its tasks slow.
//
// Every contract member is kept (id, model, status, error, content, created_at, updated_at,
// resolution, ratio, duration; the error's code and message, bounded by MaxFailureMessage and
// MaxFailureCode; the content's video_url and last_frame_url, bounded by MaxResultAddress). Of
// the other members of the answer, of its content and of its error, one object at a time, the
// ones that the Ark SDK's task structs declare (usage, seed, framespersecond, …, see
// answer_types.go) come first, then the others, each group in name order: a member is kept when
// its value is at most MaxAnswerMember bytes long and the object's kept extras together stay
// within MaxAnswerExtras bytes as written; the rest are dropped whole, never cut.
const (
	// MaxAnswerMember is the longest value, in bytes of JSON, of a member beyond the contract's
	// that a task record keeps; the contract's resolution and ratio are bounded by it too.
	MaxAnswerMember = 1 << 10
	// MaxAnswerExtras bounds the members beyond the contract's of one object of the answer
	// together (the answer, its content, its error), in bytes as written.
	MaxAnswerExtras = 8 << 10
	// MaxResultAddress is the longest result address (content.video_url or last_frame_url) taken
	// as one; a longer one is no result (see resultContent).
	MaxResultAddress = 16 << 10
)

// The contract's members of the answer, of its content and of its error.
var (
	answerContract  = []string{"id", "model", "status", "error", "content", "created_at", "updated_at", "resolution", "ratio", "duration"}
	contentContract = []string{"video_url", "last_frame_url"}
	errorContract   = []string{"code", "message"}
)

// boundExtras is fields (one object's members, sorted by name) without the members beyond
// contract that a task record does not keep (see MaxAnswerExtras); declared is the object's type
// as a typed client declares it, whose members come first. fields is reused.
func boundExtras(fields answerFields, contract []string, declared *memberType) answerFields {
	if withinBounds(fields.all(), contract) {
		return fields // the usual answer: nothing to drop, nothing allocated
	}
	keep := make([]bool, len(fields))
	budget := MaxAnswerExtras
	for _, declaredFirst := range []bool{true, false} {
		for i, f := range fields {
			if slices.Contains(contract, f.name) {
				keep[i] = true
				continue
			}
			if (declared.member(f.name) != nil) != declaredFirst {
				continue
			}
			if n := memberBytes(f); len(f.value) <= MaxAnswerMember && n <= budget {
				keep[i], budget = true, budget-n
			}
		}
	}
	out := fields[:0]
	for i, f := range fields {
		if keep[i] {
			out = append(out, f)
		}
	}
	return out
}

// withinBounds reports whether the members (name, value) beyond contract all fit MaxAnswerMember and together
// MaxAnswerExtras, so that boundExtras would keep every one.
func withinBounds(members iter.Seq2[string, json.RawMessage], contract []string) bool {
	total := 0
	for name, v := range members {
		if slices.Contains(contract, name) {
			continue
		}
		if len(v) > MaxAnswerMember {
			return false
		}
		total += memberBytes(answerField{name, v})
	}
	return total <= MaxAnswerExtras
}

// memberBytes is about what a member takes in the answer as written: its name, its value, the
// name's quotes, the colon and a comma.
func memberBytes(f answerField) int { return len(f.name) + len(f.value) + 4 }

// boundMembers is boundExtras of a decoded object: it deletes from members what is not kept.
func boundMembers(members map[string]json.RawMessage, contract []string, declared *memberType) {
	if withinBounds(maps.All(members), contract) {
		return // the usual answer: nothing to drop, nothing sorted or allocated
	}
	fields := make(answerFields, 0, len(members))
	for name, v := range members {
		fields = append(fields, answerField{name, v})
	}
	fields.sort()
	kept := boundExtras(slices.Clone(fields), contract, declared)
	if len(kept) == len(fields) {
		return
	}
	for _, f := range fields {
		if kept.get(f.name) == nil {
			delete(members, f.name)
		}
	}
}

// boundedObject is raw (a JSON object) with boundMembers applied: raw itself when nothing is
// dropped.
func boundedObject(raw json.RawMessage, contract []string, declared *memberType) json.RawMessage {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return raw
	}
	n := len(members)
	boundMembers(members, contract, declared)
	if len(members) == n {
		return raw
	}
	return plainJSON(members)
}

// all yields the fields' names and values in order.
func (fields answerFields) all() iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		for _, f := range fields {
			if !yield(f.name, f.value) {
				return
			}
		}
	}
}
