package usage

import (
	"encoding/json"
	"fmt"
	"testing"
)

// decodeUsage must agree with json.Unmarshal into a rawUsage on every object: the same values
// when it succeeds, and failure on the same inputs.
func FuzzDecodeUsage(f *testing.F) {
	for _, seed := range []string{
		`{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}`,
		`{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":[1,"}"]},"x":"a\"b"}`,
		`{"input_tokens":3,"output_tokens":4}`,
		`{"promptTokenCount":2,"candidatesTokenCount":6,"totalTokenCount":8}`,
		`{"PROMPT_TOKENS":1,"prompt_tokens":2}`, `{"prompt_tokens":1.5}`, `{"prompt_tokens":"5"}`,
		`{"prompt_tokens":null}`, `{"prompt_tokens":1e2}`, `{"prompt_tokens":99999999999999999999}`,
		`{"prompt_tokens":-0}`, `{"prompt_tokens":true}`, `{"prompt_tokens":{}}`, `{"prompt_tokens":[]}`,
		`{"prompt\u005ftokens":3}`, "{\"prompt_to\u212Aens\":3}", `{}`, ` { "total_tokens" : 4 } `,
		`{"prompt_tokens":1,"PROMPT_TOKENS":null}`, `{"candidatesTokenCount":6,"thoughtsTokenCount":30}`, `{"total_tokens":4,}`, `{"total_tokens":4`, `[1]`, `null`, `{"a":{"b":{"c":[{}]}},"total_tokens":9}`,
		`{"prompt_tokens":01}`, `{"prompt_tokens":1.}`, `{"prompt_tokens":-}`, `{"prompt_tokens":1e}`,
		`{"a":"x` + "\x01" + `","total_tokens":1}`, `{"a":tru,"total_tokens":1}`, `{"a":[1,2},"total_tokens":1}`,
		`{"total_tokens":1} x`, `{"total_tokens":1 2}`, `{"total_tokens" 1}`, `{,"total_tokens":1}`,
		`{"a":nulll}`, "{\"a\":\"\u00e9\",\"total_tokens\":3}", `{"a":"\u00e9","total_tokens":3}`,
		`{"a":{"\`, `{"a":["x\`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		got, ok := decodeUsage(obj)
		var want rawUsage
		wantOK := json.Unmarshal(obj, &want) == nil
		if ok != wantOK || (ok && counts(got) != counts(want.counts())) {
			t.Fatalf("decodeUsage(%q) = %v, %v; json.Unmarshal: %v, %v", obj, counts(got), ok, counts(want.counts()), wantOK)
		}
	})
}

// counts shows decoded counts, "-" for an absent one, for comparing two.
func counts(u usageCounts) (s string) {
	for f := range u.n {
		if !u.given[f] {
			s += "- "
		} else {
			s += fmt.Sprint(u.n[f], " ")
		}
	}
	return s
}
