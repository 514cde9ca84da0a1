package videotask

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
)

// A client decodes a task's answer into typed structs: the Ark Go SDK's
// GetContentGenerationTaskResponse and ListContentGenerationTaskItem (service/arkruntime/model),
// whose decoder is encoding/json. That decoder fails the WHOLE answer when one member has a JSON
// type its field cannot hold (a string for an integer, an array for an object, 1.5 or 1e3 for an
// integer), and it reads a member into a field whose name matches it in any letter case. An
// upstream's answer passes through to the client mostly as it was reported, so every member
// that such a struct declares (in the SDK version this module builds with and in newer ones) is
// checked against the field's type here; a member of another type is left out, an integer
// written with a fraction or an exponent that is whole is written plainly, and null (which the
// decoder takes for any type) stays. Members no struct declares pass through untouched: the
// decoder ignores them.

// valueKind is the JSON type that a struct field accepts.
type valueKind uint8

const (
	kindString valueKind = iota
	kindInt64            // a Go int or int64: a plain integer literal in range
	kindInt32
	kindBool
	kindObject // a struct: an object whose declared members have their own types
	kindArray  // a slice: an array whose elements have one type
	kindNever  // a member no answer carries (see memberNever)
)

// memberType is the type a typed client expects of one member of the answer.
type memberType struct {
	kind valueKind
	// members are an object's declared members, by their lowercase ASCII names.
	members map[string]*memberType
	// elem is the type of an array's elements.
	elem *memberType
}

var (
	memberString = &memberType{kind: kindString}
	memberInt64  = &memberType{kind: kindInt64}
	memberInt32  = &memberType{kind: kindInt32}
	memberBool   = &memberType{kind: kindBool}
	// memberNever is the SDK's embedded HttpHeader (an http.Header, which encoding/json reads from
	// a member named "HttpHeader" in any case): whatever its value, it is not the task's, and a
	// well-typed one would replace the headers the client's SDK reports.
	memberNever = &memberType{kind: kindNever}

	// taskErrorType is Ark's ContentGenerationError: the answer's error and a list item's
	// failure_reason.
	taskErrorType = &memberType{kind: kindObject, members: map[string]*memberType{
		"code": memberString, "message": memberString,
	}}

	// taskContentType is Ark's Content.
	taskContentType = &memberType{kind: kindObject, members: map[string]*memberType{
		"video_url": memberString, "last_frame_url": memberString, "file_url": memberString,
	}}

	// taskUsageType is Ark's Usage.
	taskUsageType = &memberType{kind: kindObject, members: map[string]*memberType{
		"prompt_tokens": memberInt64, "completion_tokens": memberInt64, "total_tokens": memberInt64,
		"prompt_tokens_details": {kind: kindObject, members: map[string]*memberType{
			"cached_tokens": memberInt64, "provisioned_tokens": memberInt64, "audio_tokens": memberInt64,
			"audio_cached_tokens": memberInt64,
		}},
		"completion_tokens_details": {kind: kindObject, members: map[string]*memberType{
			"reasoning_tokens": memberInt64, "provisioned_tokens": memberInt64, "audio_tokens": memberInt64,
		}},
	}}

	// taskAnswerType is the union of Ark's GetContentGenerationTaskResponse and
	// ListContentGenerationTaskItem.
	taskAnswerType = &memberType{kind: kindObject, members: map[string]*memberType{
		"id": memberString, "model": memberString, "status": memberString,
		"error": taskErrorType, "failure_reason": taskErrorType,
		"content": taskContentType, "usage": taskUsageType,
		"created_at": memberInt64, "updated_at": memberInt64, "duration": memberInt64,
		"seed": memberInt64, "frames": memberInt64, "framespersecond": memberInt64,
		"execution_expires_after": memberInt64, "priority": memberInt32,
		"safety_identifier": memberString, "subdivisionlevel": memberString, "fileformat": memberString,
		"resolution": memberString, "ratio": memberString, "output_format": memberString,
		"revised_prompt": memberString, "service_tier": memberString, "draft_task_id": memberString,
		"generate_audio": memberBool, "draft": memberBool,
		"tools": {kind: kindArray, elem: &memberType{kind: kindObject, members: map[string]*memberType{
			"type": memberString,
		}}},
		"httpheader": memberNever,
	}}
)

// member is the declared member that a decoder reads name into (its name in any letter case,
// Unicode simple folding as encoding/json matches it), or nil.
func (t *memberType) member(name string) *memberType {
	if m, ok := t.members[name]; ok {
		return m
	}
	if !caseVariants([]byte(name)) {
		return nil // lowercase ASCII: equal to a declared name or to none
	}
	for declared, m := range t.members {
		if strings.EqualFold(name, declared) {
			return m
		}
	}
	return nil
}

// fit is v as a member of type t that a typed client decodes: v itself, v rewritten (an integer
// written plainly; an object or array without its members of the wrong type), or ok false when
// v cannot be one (the member is to be left out). v must be valid JSON.
func (t *memberType) fit(v json.RawMessage) (json.RawMessage, bool) {
	if t.kind == kindNever {
		return nil, false
	}
	if len(v) == 0 {
		return nil, false
	}
	if string(v) == "null" {
		return v, true // encoding/json leaves a field as it is for null
	}
	switch t.kind {
	case kindString:
		return v, v[0] == '"'
	case kindBool:
		return v, string(v) == "true" || string(v) == "false"
	case kindInt64, kindInt32:
		return fitInteger(v, t.kind == kindInt32)
	case kindObject:
		return t.fitObject(v)
	case kindArray:
		return t.fitArray(v)
	}
	return nil, false
}

// fitInteger is v as an integer member: a plain literal in range as it is, a whole number with
// a fraction or an exponent (5.0, 1.5e3) written plainly.
func fitInteger(v json.RawMessage, is32 bool) (json.RawMessage, bool) {
	if v[0] == '"' {
		return nil, false
	}
	bits := 64
	if is32 {
		bits = 32
	}
	if plainInteger(v) {
		_, err := strconv.ParseInt(string(v), 10, bits)
		return v, err == nil
	}
	n, ok := integer(v)
	if !ok || is32 && (n < math.MinInt32 || n > math.MaxInt32) {
		return nil, false
	}
	return mustJSON(n), true
}

// fitObject is v as an object member: its declared members fitted (each left out when it does not
// fit), the others as they were. The object is written again from its decoded members, so that a
// name given twice (whose last value a decoder keeps, having failed on the first) is answered
// once, with the value that was checked.
func (t *memberType) fitObject(v json.RawMessage) (json.RawMessage, bool) {
	if v[0] != '{' {
		return nil, false
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(v, &members) != nil {
		return nil, false
	}
	for name, value := range members {
		m := t.member(name)
		if m == nil {
			continue
		}
		if fitted, ok := m.fit(value); ok {
			members[name] = fitted
		} else {
			delete(members, name)
		}
	}
	return plainJSON(members), true
}

// fitArray is v as an array member: its elements that fit, fitted.
func (t *memberType) fitArray(v json.RawMessage) (json.RawMessage, bool) {
	if v[0] != '[' {
		return nil, false
	}
	var elems []json.RawMessage
	if json.Unmarshal(v, &elems) != nil {
		return nil, false
	}
	kept := elems[:0]
	for _, e := range elems {
		if fitted, ok := t.elem.fit(e); ok {
			kept = append(kept, fitted)
		}
	}
	return plainJSON(kept), true
}

// plainJSON is v encoded as the answers are (apierror.Marshal: keys sorted, values compacted,
// no HTML escaping), for values that always encode (decoded JSON).
func plainJSON(v any) json.RawMessage {
	b, _ := apierror.Marshal(v) // v holds only decoded JSON values: it encodes
	return b
}
