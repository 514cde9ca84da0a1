package videotask

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// Task statuses of spec §3.1.
const (
	StatusQueued    = adaptor.StatusQueued
	StatusRunning   = adaptor.StatusRunning
	StatusSucceeded = adaptor.StatusSucceeded
	StatusFailed    = adaptor.StatusFailed
	StatusCancelled = adaptor.StatusCancelled
	StatusExpired   = adaptor.StatusExpired
)

// Statuses lists every status a client can see.
var Statuses = []string{StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled, StatusExpired}

// statusJSON holds each status as a JSON string, shared by the answers (never written to).
var statusJSON = func() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(Statuses))
	for _, s := range Statuses {
		m[s] = quoted(s)
	}
	return m
}()

// normalStatus maps an upstream status onto §3.1.
func normalStatus(s string) string {
	switch strings.ToLower(s) {
	case "queued", "pending", "submitted", "created":
		return StatusQueued
	case "succeeded", "success", "completed", "done":
		return StatusSucceeded
	case "failed", "failure", "error":
		return StatusFailed
	case "cancelled", "canceled":
		return StatusCancelled
	case "expired", "timeout":
		return StatusExpired
	default: // running, processing, in_progress and anything new
		return StatusRunning
	}
}

// answerStatus is normalStatus of an upstream answer's status (not a string: running), without
// decoding the usual statuses.
func answerStatus(raw json.RawMessage) string {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		switch string(raw[1 : n-1]) {
		case StatusQueued:
			return StatusQueued
		case StatusRunning:
			return StatusRunning
		case StatusSucceeded:
			return StatusSucceeded
		case StatusFailed:
			return StatusFailed
		}
	}
	return normalStatus(unquoted(raw))
}

// queryResult builds the §2.5 query answer from an upstream answer and the ownership record:
// id and model as recorded (the client's model id); a §3.1 status; error null unless failed;
// content {} until success; resolution, ratio and duration only when known. Other upstream
// fields pass through within the bounds of what a task record keeps (answer_bound.go), each that the Ark Go SDK's task structs declare only with the JSON type
// they declare it with (answer_types.go): a typed client decodes every answer. The answer's
// members come sorted by name, as encodeAnswer writes them; the upstream's map is left as it is
// (the watcher fingerprints it, and builds no second map).
//
// A succeeded answer without a result (resultContent: content.video_url a result address) is not
// a finished task: it reads running, as an adaptor's state that no rule maps does, so that
// nobody is billed for, shown or sent a success without a result. A task recorded running that
// its upstream reports queued again stays running: a client sees a task's status go forward
// only (a finished one is never changed at all, see answerChange.apply). A member whose name
// differs from one of the answer's own only by letter case (Unicode simple folding: "Status",
// "ſtatus") is dropped: a client's case-blind decoder (encoding/json, the Ark Go SDK's) would
// read it in place of the gateway's member.
func queryResult(upstream map[string]json.RawMessage, t storage.Task) (answerFields, string) {
	status := answerStatus(upstream["status"])
	content := emptyObjectJSON
	if status == StatusSucceeded {
		if c, ok := resultContent(upstream["content"], t); ok {
			content = c
		} else {
			status = StatusRunning
		}
	}
	if status == StatusQueued && t.Status == StatusRunning {
		status = StatusRunning
	}
	out := make(answerFields, 0, len(upstream)+4)
	_, createdOK := integer(upstream["created_at"])
	_, updatedOK := integer(upstream["updated_at"])
	for k, v := range upstream {
		if shadowsAnswerField(k) || k == "callback_url" || mentionsRelay(v) {
			// An upstream's callback_url is the gateway's relay address (relay.go), whose
			// token is between the two: echoed, as callback_url or in a member of the
			// upstream's own, it is never the client's to see.
			continue
		}
		switch k {
		case "id", "model", "status", "error", "content":
			continue // set below
		case "failure_reason":
			continue // the list's name for error, which it sets (listItem)
		case "created_at", "updated_at", "duration":
			// Integers, written plainly (1.5e3 is 1500): a client decodes them as such. A
			// timestamp that is not one is the record's (below); a duration, omitted, as is one
			// out of the contract's range (answerDuration).
			n, ok := integer(v)
			if !ok || k == "duration" && !answerDuration(n) {
				continue
			}
			if !plainInteger(v) {
				v = mustJSON(n)
			}
		case "resolution", "ratio":
			if s, ok := jsonString(v); !ok || s == "" || len(v) > MaxAnswerMember {
				continue // only when known, and a string (no resolution is a kilobyte long)
			}
		default:
			if m := taskAnswerType.member(k); m != nil {
				fitted, ok := m.fit(v)
				if !ok {
					continue // of a type the client's struct cannot hold
				}
				v = fitted
			}
		}
		out = append(out, answerField{k, v})
	}
	out = append(out,
		answerField{"id", quotedLike(upstream["id"], t.ID)},
		answerField{"model", quotedLike(upstream["model"], t.Model)}, // the client's id, also when the upstream knows it by another (model_map)
		answerField{"status", statusJSON[status]})
	if !createdOK {
		out = append(out, answerField{"created_at", mustJSON(t.CreatedAt)})
	}
	if !updatedOK {
		out = append(out, answerField{"updated_at", mustJSON(t.UpdatedAt)})
	}
	errorJSON := nullJSON
	if status == StatusFailed {
		errorJSON = failure(upstream)
	}
	out = append(out, answerField{"error", errorJSON}, answerField{"content", content})
	out.sort()
	return boundExtras(out, answerContract, taskAnswerType), status
}

// mentionsRelay reports whether a member's value (JSON) holds the gateway's relay path, as
// written or with its slashes escaped (\/), which every echo of a relay address holds.
func mentionsRelay(v json.RawMessage) bool {
	return bytes.Contains(v, relayPathJSON) || bytes.Contains(v, relayPathEscaped)
}

var (
	relayPathJSON    = []byte(RelayPath)
	relayPathEscaped = []byte(strings.ReplaceAll(RelayPath, "/", `\/`))
)

// answerFieldNames are the members every query answer has or may have, which the gateway sets
// or checks.
var answerFieldNames = []string{"id", "model", "status", "error", "content", "created_at", "updated_at",
	"resolution", "ratio", "duration", "failure_reason"}

// shadowsAnswerField reports whether name differs from one of answerFieldNames only by letter
// case. A name of lowercase ASCII letters, digits and underscores (every usual one) equals such a
// name or folds to none of them, so it is answered without comparing.
func shadowsAnswerField(name string) bool {
	plain := true
	for i := range len(name) {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			plain = false
			break
		}
	}
	if plain {
		return false
	}
	for _, f := range answerFieldNames {
		if strings.EqualFold(name, f) {
			return true
		}
	}
	return false
}

// caseVariants reports whether a JSON text may hold a name that differs from a lowercase ASCII
// one only by case: it has an uppercase ASCII letter, a byte past ASCII or an escape.
func caseVariants(b []byte) bool {
	for _, c := range b {
		if c >= 'A' && c <= 'Z' || c >= 0x80 || c == '\\' {
			return true
		}
	}
	return false
}

// nullJSON and emptyObjectJSON are shared by the answers (never written to).
var (
	nullJSON        = json.RawMessage("null")
	emptyObjectJSON = json.RawMessage("{}")
)

// failure is the error object of a failed task: the upstream's (its error, else its
// failure_reason), or one with a message. Its members are those of the Ark SDK's
// ContentGenerationError fitted to their types: a code that is not a string (spec §2.5:
// error.code is a string, and may be absent) is left out.
func failure(upstream map[string]json.RawMessage) json.RawMessage {
	for _, k := range []string{"error", "failure_reason"} {
		var e map[string]json.RawMessage
		if json.Unmarshal(upstream[k], &e) == nil && e != nil && isString(e["message"]) {
			if fitted, ok := taskErrorType.fit(upstream[k]); ok {
				return redactedFailure(boundedObject(fitted, errorContract, taskErrorType)) // message, a string, stays
			}
		}
	}
	return mustJSON(map[string]string{"message": "the task failed"})
}

// recordResult is the synthetic answer for a task whose upstream state is not cached.
func recordResult(t storage.Task) map[string]json.RawMessage {
	status := t.Status
	if status == "" {
		status = StatusQueued
	}
	return map[string]json.RawMessage{
		"id": mustJSON(t.ID), "model": mustJSON(t.Model), "status": mustJSON(status),
		"error": json.RawMessage("null"), "content": json.RawMessage("{}"),
		"created_at": mustJSON(t.CreatedAt), "updated_at": mustJSON(t.UpdatedAt),
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func isString(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && s != ""
}
