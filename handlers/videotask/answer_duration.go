package videotask

import (
	"encoding/json"

	"github.com/mediagw/mediagw/handlers/billing"
)

// MaxAnswerDuration is the longest duration a task's answer shows, in seconds: the contract's
// limit of a video task's duration (spec §8, -1..15). A provider that reports a length outside
// 1..MaxAnswerDuration (a longer video than the contract knows, or 0 or -1, which are no length)
// gets an answer without duration, as one that reports none (spec §2.5: omitted when no data).
// The task is still billed by what the provider reported (reportedUsage; an adaptor's Usage).
const MaxAnswerDuration = 15

// answerDuration reports whether a reported length (seconds) is shown in an answer.
func answerDuration(seconds int64) bool { return seconds >= 1 && seconds <= MaxAnswerDuration }

// reportedUsage is the usage to store beside a succeeded Ark answer (the upstream's answer
// members, and body, the client's answer made of them) when the client's answer does not say
// all that the task is billed by: a duration past MaxAnswerDuration, which the answer leaves
// out. Nil otherwise: the task is billed by its answer (billedUsage), as before.
func reportedUsage(answer map[string]json.RawMessage, body json.RawMessage) json.RawMessage {
	seconds, ok := integer(answer["duration"])
	if !ok || seconds <= MaxAnswerDuration {
		return nil
	}
	u := billedUsage(body)
	u.VideoSeconds = seconds
	return mustJSON(billing.Usage(u))
}
