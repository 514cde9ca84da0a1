package usage

import (
	"strings"
	"testing"
)

// TestDataItemsReadsStatusAndAmbiguousKeys: the top-level "status" of a large image task answer
// is kept however the answer is cut into writes, and the answer is ambiguous when a member read
// appears twice, in another letter case (Unicode folding too: ſ is s), or when a top-level key has
// an escape; nested and other keys are not checked.
func TestDataItemsReadsStatusAndAmbiguousKeys(t *testing.T) {
	big := strings.Repeat("QUJD", 30_000)
	for _, tc := range []struct {
		body      string
		status    string
		ambiguous bool
	}{
		{`{"id":"t1","status":"succeeded","data":[{"b64_json":"` + big + `"}]}`, "succeeded", false},
		{`{"data":[{"b64_json":"` + big + `","status":"failed"}],"status":"SUCCEEDED","meta":{"status":"x","Status":"y"}}`, "SUCCEEDED", false},
		{`{"status":"succeeded","data":[],"status":"running"}`, "running", true},
		{`{"status":"succeeded","Status":"failed"}`, "succeeded", true},
		{`{"status":"succeeded","ſtatus":"failed"}`, "succeeded", true},
		{`{"status":"succeeded","st\u0061tus":"failed"}`, "succeeded", true},
		{`{"data":[1],"DATA":[1,2]}`, "", true},
		{`{"status":"fa\u0069led"}`, "", false},
		{`{"status":7,"data":[]}`, "", false},
		// Values of other members are values, whatever they spell: an escape, a member's name
		// in another case, or a member's name itself.
		{`{"id":"t1","revised_prompt":"caf\u00e9 \"x\"","status":"completed"}`, "completed", false},
		{`{"note":"Status","status":"completed"}`, "completed", false},
		{`{"note":"status","status":"completed","hint":"data"}`, "completed", false},
		{`{"meta":{"a":1},"note":"Status","status":"completed"}`, "completed", false},
		{`["Status","status"]`, "", false},
	} {
		for _, chunk := range []int{1, 5, len(tc.body)} {
			var c DataItems
			for i := 0; i < len(tc.body); i += chunk {
				c.Write([]byte(tc.body[i:min(i+chunk, len(tc.body))]))
			}
			if c.Status() != tc.status || c.Ambiguous() != tc.ambiguous || !c.Complete() {
				t.Errorf("%.70s… in writes of %d: status %q, ambiguous %v, complete %v; want %q, %v, true",
					tc.body, chunk, c.Status(), c.Ambiguous(), c.Complete(), tc.status, tc.ambiguous)
			}
		}
	}
}
