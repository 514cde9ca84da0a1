package jsonkeys

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are bodies at the edges of JSON's grammar, each answered by valid as by json.Valid
// (and the seeds of FuzzValid).
var validCases = []string{
	``, ` `, `{}`, ` {} `, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":}`, `{,}`, `[,1]`,
	`{"a":1}{}`, `{"a":1} x`, `{"a":[1,2,{"b":null}],"c":true,"d":false}`, `{"a":tru}`, `nul`,
	`"\u00e9"`, `"\u00g9"`, `"\x"`, `"\/"`, `"a` + "\x01" + `"`, `"` + "\xff\xfe" + `"`, `"\ud800"`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-`, `1e`, `-1.5e-10`, `+1`, `0x10`,
	`[1 2]`, `{"a":1 "b":2}`, `{"a":{"b":[]}}`, `[}`, `{]`, `{"a":1]`, `"unterminated`, `"\`,
	"{\"a\"\t:\r\n1}", `[[[[]]]]`, `[[[[]]]`, `{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}`,
	`truex`, `[true,false,null]`, `{"a":"\u12"}`, "\x00", `{"a":1}` + "\x00",
}

func TestValidAnswersAsEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("valid(%q) = %v, json.Valid %v", c, got, want)
		}
	}
}

// TestValidNestingBound: encoding/json refuses a value nested more than 10,000 deep; so does
// valid, at the same depth, for arrays and objects alike.
func TestValidNestingBound(t *testing.T) {
	for _, depth := range []int{maxNestingDepth, maxNestingDepth + 1} {
		arrays := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		objects := strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
		for _, c := range []string{arrays, objects} {
			if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want || got != (depth <= maxNestingDepth) {
				t.Errorf("depth %d: valid %v, json.Valid %v", depth, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := valid(data), json.Valid(data); got != want {
			t.Errorf("valid(%q) = %v, json.Valid %v", data, got, want)
		}
	})
}
