package videotask

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestBoundExtras: the contract's members always stay, whatever their size; of the others, the
// ones a typed client declares are kept before unknown ones, a member past MaxAnswerMember is
// dropped, and what is kept beyond the contract stays within MaxAnswerExtras. An answer within
// the bounds is returned as it is. (The unknown members b0… sort before seed and usage.)
func TestBoundExtras(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", MaxAnswerMember) + `"`)
	fields := answerFields{
		{"a_unknown", json.RawMessage(`1`)},
		{"content", json.RawMessage(`{"video_url":"https://cdn.example.com/` + strings.Repeat("v", 4<<10) + `"}`)},
		{"huge", big},
		{"id", json.RawMessage(`"cgt-1"`)},
		{"seed", json.RawMessage(`7`)},
		{"status", json.RawMessage(`"succeeded"`)},
		{"usage", json.RawMessage(`{"completion_tokens":5}`)},
	}
	for i := range 2000 {
		fields = append(fields, answerField{"b" + strconv.Itoa(i), json.RawMessage(`0`)})
	}
	fields.sort()
	kept := boundExtras(fields, answerContract, taskAnswerType)
	for _, name := range []string{"content", "id", "status", "seed", "usage", "a_unknown", "b0"} {
		if kept.get(name) == nil {
			t.Errorf("%s was dropped", name)
		}
	}
	if kept.get("huge") != nil {
		t.Error("a member past MaxAnswerMember was kept")
	}
	extras := 0
	for _, f := range kept {
		if f.name != "content" && f.name != "id" && f.name != "status" {
			extras += memberBytes(f)
		}
	}
	if extras > MaxAnswerExtras || extras < MaxAnswerExtras-16 || len(kept) > 1200 {
		t.Errorf("kept %d members, %d bytes of extras", len(kept), extras)
	}

	small := answerFields{{"id", json.RawMessage(`"cgt-1"`)}, {"seed", json.RawMessage(`7`)}, {"x", json.RawMessage(`"y"`)}}
	if got := boundExtras(small, answerContract, taskAnswerType); len(got) != 3 || &got[0] != &small[0] {
		t.Errorf("an answer within the bounds became %v", got)
	}
}
