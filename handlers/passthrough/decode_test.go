package passthrough

import (
	"encoding/json"
	"mime"
	"testing"
)

// stringValue must agree with json.Unmarshal into a string on every input: the same value,
// or an error on the same inputs.
func FuzzStringValue(f *testing.F) {
	for _, seed := range []string{
		`"gpt-4o-mini"`, `""`, `"a\"b"`, `"\u0041"`, `"tab	in"`, "\"\xff\"", `"é"`, `null`, `12`,
		`"unterminated`, `"`, `"a"b"`, ` "padded" `, `{"model":"x"}`, `["x"]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want string
		got, gotErr := stringValue(raw)
		wantErr := json.Unmarshal(raw, &want)
		if (gotErr == nil) != (wantErr == nil) || got != want {
			t.Fatalf("stringValue(%q) = %q, %v; json.Unmarshal: %q, %v", raw, got, gotErr, want, wantErr)
		}
	})
}

func TestMediaTypeAgreesWithMime(t *testing.T) {
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "multipart/form-data; boundary=x", "", "text/plain;;"} {
		mt, params, err := mediaType(ct)
		wmt, wparams, werr := mime.ParseMediaType(ct)
		if mt != wmt || len(params) != len(wparams) || (err == nil) != (werr == nil) {
			t.Errorf("mediaType(%q) = %q %v %v; mime: %q %v %v", ct, mt, params, err, wmt, wparams, werr)
		}
	}
}
