package videotask

import (
	"encoding/json"
	"testing"
)

// An answer's fingerprint does not depend on the order its fields are read in, and changes with
// any key or value, a value moved to another key included.
func TestFingerprint(t *testing.T) {
	base := map[string]json.RawMessage{"id": json.RawMessage(`"cgt-1"`), "status": json.RawMessage(`"queued"`),
		"created_at": json.RawMessage("1"), "updated_at": json.RawMessage("2")}
	fp := fingerprint(base)
	for range 20 { // map iteration order varies from one range to the next
		if got := fingerprint(base); got != fp {
			t.Fatalf("fingerprint changed between two reads of the same answer: %x, %x", got, fp)
		}
	}
	for _, other := range []map[string]json.RawMessage{
		{"id": json.RawMessage(`"cgt-1"`), "status": json.RawMessage(`"running"`), "created_at": json.RawMessage("1"), "updated_at": json.RawMessage("2")},
		{"id": json.RawMessage(`"cgt-1"`), "status": json.RawMessage(`"queued"`), "created_at": json.RawMessage("2"), "updated_at": json.RawMessage("1")},
		{"id": json.RawMessage(`"cgt-1"`), "status": json.RawMessage(`"queued"`), "created_at": json.RawMessage("1")},
		{"id": json.RawMessage(`"cgt-1"`), "status": json.RawMessage(`"queued"`), "created_at": json.RawMessage("1"), "updated_at": json.RawMessage("2"), "x": nil},
		{"id": json.RawMessage(`"cgt-1"`), "status": json.RawMessage(`"queued"`), "created_at": json.RawMessage("1"), "updated_a": json.RawMessage("t2")},
		{},
	} {
		if fingerprint(other) == fp {
			t.Errorf("fingerprint(%q) = that of %q", other, base)
		}
	}
}
