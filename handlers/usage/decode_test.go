package usage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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
		`{"cache_creation_input_tokens":9,"cache_creation":{"ephemeral_5m_input_tokens":4,"ephemeral_1h_input_tokens":5}}`,
		`{"cache_creation":{"ephemeral_1h_input_tokens":5},"Cache_Creation":{"ephemeral_5m_input_tokens":1}}`,
		`{"cache_creation":{"ephemeral_1h_input_tokens":5},"cache_creation":null}`, `{"cache_creation":"x"}`,
		`{"cache_creation":[]}`, `{"cache_creation":{"ephemeral_1h_input_tokens":1.5}}`, `{"cache_creation":{"ephemeral_1h_input_tokens":-3}}`,
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
	return s + fmt.Sprint("1h:", u.hourWrites)
}

// findUsage must find what the plainest reading finds: the last "usage" or "usageMetadata" key
// that bytes.LastIndex finds, its object delimited by objectPrefix and decoded by json.Unmarshal.
func FuzzFindUsage(f *testing.F) {
	for _, seed := range []string{
		chatAnswer,
		`{"usage":{"prompt_tokens":1},"x":{"usage":{"total_tokens":"a"}}}`,
		`{"usage":{"total_tokens":3},"b":"\"usage\":{\"total_tokens\":9}"}`,
		`{"usageMetadata":{"promptTokenCount":2,"totalTokenCount":5}} "usage_x":{}`,
		`{"usage" : {"total_tokens":4,"d":{"e":"}"}} , "usage":null}`,
		`{"usage":{"total_tokens":4`, `"usage":{"a":"\u00e9","total_tokens":3}}`, `"usage":{"total_tokens":1} x}`,
		`"usage":{"total_tokens":1,}`, `"usage""usage":{"input_tokens":2}"usage"`, `"usage":{"a":{"\`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gotOK := findUsage(b)
		want, wantOK := plainFindUsage(b)
		if got != want || gotOK != wantOK {
			t.Fatalf("findUsage(%q) = %+v, %v; want %+v, %v", b, got, gotOK, want, wantOK)
		}
	})
}

// plainFindUsage is findUsage written plainly, for FuzzFindUsage.
func plainFindUsage(b []byte) (Tokens, bool) {
	end := len(b)
	for range 6 {
		i := bytes.LastIndex(b[:end], usagePrefix)
		if i < 0 {
			break
		}
		end = i
		if i > 0 && b[i-1] == '\\' {
			continue
		}
		rest := b[i+len(usagePrefix):]
		if name, ok := bytes.CutPrefix(rest, []byte(`"`)); ok {
			rest = name
		} else if name, ok := bytes.CutPrefix(rest, []byte(`Metadata"`)); ok {
			rest = name
		} else {
			continue
		}
		rest = bytes.TrimLeft(rest, " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		if len(rest) == 0 || rest[0] != '{' {
			continue
		}
		if obj := objectPrefix(rest); obj != nil {
			var raw rawUsage
			if json.Unmarshal(obj, &raw) == nil {
				u := raw.counts()
				return u.tokens(), true
			}
		}
	}
	return Tokens{}, false
}

// parseCount must read every number validNumber accepts as strconv.ParseInt does.
func FuzzParseCount(f *testing.F) {
	for _, seed := range []string{"0", "-0", "7", "-12", "123456789012345678", "-123456789012345678",
		"1234567890123456789", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1.5", "1e3", "-2E-1"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		if len(value) == 0 {
			return
		}
		if end, valid := validNumber(value, 0); !valid || end != len(value) {
			return
		}
		got, gotErr := parseCount(value)
		want, wantErr := strconv.ParseInt(string(value), 10, 64)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("parseCount(%q) = %d, %v; strconv.ParseInt: %d, %v", value, got, gotErr, want, wantErr)
		}
	})
}

// usageField tries the names as spelled before folding case: that finds the same field only if
// no two names are the same folded.
func TestUsageFieldsDifferFolded(t *testing.T) {
	for i, a := range usageFields {
		for _, b := range usageFields[i+1:] {
			if strings.EqualFold(a, b) {
				t.Errorf("usage fields %q and %q are the same folded", a, b)
			}
		}
		if f := usageField([]byte(strings.ToUpper(a))); f != i {
			t.Errorf("usageField(%q) = %d, want %d", strings.ToUpper(a), f, i)
		}
	}
}

// lastUsageKey must find what bytes.LastIndex finds: the key at every place in texts of every
// length up to 40, among fillers with and without g's and parts of the key.
func TestLastUsageKeyIsLastIndex(t *testing.T) {
	for _, filler := range []string{"x", "g", `"usag`, "gg\"usa", "sage\"", "ug"} {
		for n := range 41 {
			base := bytes.Repeat([]byte(filler), n/len(filler)+1)[:n]
			for at := -1; at+len(usagePrefix) <= n; at++ {
				b := bytes.Clone(base)
				if at >= 0 {
					copy(b[at:], usagePrefix)
				}
				if got, want := lastUsageKey(b), bytes.LastIndex(b, usagePrefix); got != want {
					t.Fatalf("lastUsageKey(%q) = %d, want %d", b, got, want)
				}
			}
		}
	}
}
