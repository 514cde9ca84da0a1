package jsonkeys

import (
	"encoding/json"
	"strings"
	"testing"
)

// validInPieces is what a Validator tells of data written in pieces of size bytes.
func validInPieces(data []byte, size int) bool {
	var v Validator
	for len(data) > 0 {
		n := min(size, len(data))
		v.Write(data[:n])
		data = data[n:]
	}
	return v.Valid()
}

func TestValidatorAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5e-3, -0, true, false, null, "x\u00e9\n"]} `,
		`{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{,}`, `[01]`, `[1.]`, `[.1]`, `[1e]`, `[1e+]`, `[-]`,
		`"\x"`, `"\u12g4"`, "\"a\x01\"", `{"a":1}}`, `{"a":1} x`, `1`, `-1.5E+10`, `tru`, `nul`,
		`[1 2]`, `{"a":1 "b":2}`, `{"a":[}`, `[{]}`, `{"a":{"b":[[]]}}`, `"abc`, `{"data":[{"b64_json":"` +
			strings.Repeat("iVBO", 1000) + `"}],"status":"succeeded"}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	}
	for _, c := range cases {
		for _, size := range []int{1, 2, 3, 7, 1 << 20} {
			if got, want := validInPieces([]byte(c), size), json.Valid([]byte(c)); got != want {
				t.Errorf("Validator(%.60q in pieces of %d) = %v, json.Valid = %v", c, size, got, want)
			}
		}
	}
}

func FuzzValidator(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,"\u00e9\\",true,null]}`, `[01]`, `{"a":1,}`, `"\ud83d\ude00"`, `0`, ` -0.0E-0 `} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, data []byte, size int) {
		size = max(1, size%64)
		if got, want := validInPieces(data, size), json.Valid(data); got != want {
			t.Fatalf("Validator(%q in pieces of %d) = %v, json.Valid = %v", data, size, got, want)
		}
	})
}

// TestValidatorFailsAtTheFirstWrongByte: Failed is set by the byte that no valid text has there,
// and not before it.
func TestValidatorFailsAtTheFirstWrongByte(t *testing.T) {
	text := `{"data":[{"b64_json":"iVBO"}],"status":"succeeded",x` + strings.Repeat(" ", 100)
	var v Validator
	for i := range len(text) {
		v.Write([]byte{text[i]})
		if v.Failed() != (i >= strings.IndexByte(text, 'x')) {
			t.Fatalf("after %q: Failed %v", text[:i+1], v.Failed())
		}
	}
}
