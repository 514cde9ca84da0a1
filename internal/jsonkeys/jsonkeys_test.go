package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestMembersRefusesSmuggledKeys(t *testing.T) {
	for _, tc := range []struct {
		name, body, problem, field string
	}{
		{"case variant", `{"model":"a","Model":"b"}`, Case, "model"},
		{"upper case alone", `{"MODEL":"b"}`, Case, "model"},
		{"repeated", `{"model":"a","model":"b"}`, Repeated, "model"},
		{"repeated through an escape", `{"model":"a","mod\u0065l":"b"}`, Repeated, "model"},
		{"escaped case variant", `{"model":"a","\u004dodel":"b"}`, Case, "model"},
		{"kelvin sign folds to k", `{"tas\u212a":"x","task":"y"}`, Case, "task"},
		{"long s folds to s", `{"\u017ftream":true}`, Case, "stream"},
		{"repeated unchecked key", `{"model":"a","n":1,"n":2}`, Repeated, "n"},
		{"invalid UTF-8", "{\"mod\xffel\":\"b\",\"model\":\"a\"}", Unclear, "model"},
		{"lone surrogate", `{"model\ud800":"b"}`, Unclear, "model"},
		{"NUL", `{"model\u0000":"b"}`, Unclear, "model"},
		{"newline escape", `{"model\n":"b"}`, Unclear, "model"},
		{"replacement character", `{"mod\ufffdel":"b"}`, Unclear, "model"},
		{"unclear other key", `{"x\u0000":"b"}`, Unclear, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Members([]byte(tc.body), "model", "task", "stream")
			var e *Error
			if !errors.As(err, &e) || e.Problem != tc.problem || (tc.field != "" && e.Field != tc.field) {
				t.Fatalf("err = %v, want %s of %q", err, tc.problem, tc.field)
			}
			if e.Error() == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestMembersAcceptsAndReturnsExactValues(t *testing.T) {
	body := `  {"model" : "a\"b", "content":[{"model":"x"},{"Model":"nested keys are not checked"}], "n":-1.5e3,` +
		` "ok":true, "none":null, "emoji":"\ud83d\ude00", "\ud83d\ude00":1, "stream":false}  `
	got, err := Members([]byte(body), "model", "n", "ok", "none", "stream", "absent")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"model": `"a\"b"`, "n": `-1.5e3`, "ok": `true`, "none": `null`, "stream": `false`}
	if len(got) != len(want) {
		t.Fatalf("got %d values: %s", len(got), got)
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	if got, err := Members([]byte(`{}`), "model"); err != nil || len(got) != 0 {
		t.Fatalf("empty object: %v %v", got, err)
	}
}

func TestMembersRefusesNonObjects(t *testing.T) {
	for _, body := range []string{``, `[]`, `"model"`, `{"model":"a"} {"model":"b"}`, `{"model":"a",}`, `null`, "\xef\xbb\xbf{}"} {
		if _, err := Members([]byte(body), "model"); !errors.Is(err, ErrNotObject) {
			t.Errorf("%q: err = %v", body, err)
		}
	}
}

// FuzzMembers checks the rule's promise: whenever Members accepts a body, every kind of decoder
// finds the same model in it as Members did.
func FuzzMembers(f *testing.F) {
	for _, seed := range []string{
		`{"model":"a"}`, `{"model":"a","Model":"b"}`, `{"mod\u0065l":"a"}`, `{"MODEL":"b","model":"a"}`,
		`{"model":"a","model":"b"}`, `{"\u212a":1,"k":2}`, "{\"mod\xffel\":1}", `{"model\ud800":1}`,
		`{"a":{"model":"x"},"model":[1,{"b":"}"}]}`, `{"model":null}`, `[]`, `{"model":"a"`,
		`{"model":"a","Model":"b"`, `{"model":"a","model":"b"} x`, `{"model":"a"} {}`, `{"a":1,"a":[}`, `{"model":"a",}`,
		`{"model" "a"}`, `{"model":"a" "b":1}`, `{"model":tru}`, `{"model":01}`, ` {"model":"a"} `, `{}`, ` { } `, `{"a":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := Members(body, "model")
		found := []json.RawMessage{[]byte("stale")}
		if errOf := MembersOf(body, []string{"model"}, found); fmt.Sprint(errOf) != fmt.Sprint(err) || (err == nil && !bytes.Equal(found[0], got["model"])) {
			t.Fatalf("MembersOf: %v %q, Members: %v %q", errOf, found[0], err, got["model"])
		}
		if err != nil {
			var e *Error
			if !errors.Is(err, ErrNotObject) && !errors.As(err, &e) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if errors.Is(err, ErrNotObject) && json.Valid(body) && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) {
				t.Fatalf("a valid object was called not an object: %q", body)
			}
			if e != nil && !json.Valid(body) {
				t.Fatalf("data that is not valid JSON was refused for a key (%v), not as ErrNotObject: %q", err, body)
			}
			if errors.Is(err, ErrNotObject) && found[0] != nil {
				t.Fatalf("MembersOf refused the body as not an object and left %q found", found[0])
			}
			return
		}
		checked := string(got["model"])

		// Go's encoding/json: case-insensitive, last wins.
		var folded struct {
			Model json.RawMessage `json:"model"`
		}
		if err := json.Unmarshal(body, &folded); err != nil {
			t.Fatalf("Members accepted a body encoding/json refuses: %v", err)
		}
		if string(folded.Model) != checked {
			t.Fatalf("a case-insensitive decoder sees model %s, mediagw checked %s", folded.Model, checked)
		}
		// Exact keys, last wins (a map).
		var exact map[string]json.RawMessage
		if err := json.Unmarshal(body, &exact); err != nil {
			t.Fatal(err)
		}
		if string(exact["model"]) != checked {
			t.Fatalf("an exact decoder sees model %s, mediagw checked %s", exact["model"], checked)
		}
		// All is that map.
		all, err := All(body, "model")
		if err != nil || len(all) != len(exact) {
			t.Fatalf("All: %d members (err %v), encoding/json has %d", len(all), err, len(exact))
		}
		for k, v := range exact {
			if string(all[k]) != string(v) {
				t.Fatalf("All has %q = %s, encoding/json has %s", k, all[k], v)
			}
		}
		// First wins, exact and case-insensitive.
		if first := firstMember(t, body, false); first != checked {
			t.Fatalf("an exact first-wins decoder sees model %s, mediagw checked %s", first, checked)
		}
		if first := firstMember(t, body, true); first != checked {
			t.Fatalf("a case-insensitive first-wins decoder sees model %s, mediagw checked %s", first, checked)
		}
	})
}

// firstMember decodes the first top-level member named model (by exact or folded comparison).
func firstMember(t *testing.T, body []byte, fold bool) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		key := tok.(string)
		if key == "model" || (fold && strings.EqualFold(key, "model")) {
			return string(raw)
		}
	}
	return ""
}

// TestAllIsWhatEncodingJSONDecodes checks All against encoding/json's map of the same body, and
// that the repeat check holds past the few keys it keeps in a list.
func TestAllIsWhatEncodingJSONDecodes(t *testing.T) {
	for _, body := range []string{
		`{}`,
		` {"model" : "m", "mod\u0065x":[1,{"a":"}"}], "n":-1.5e3, "none":null, "\ud83d\ude00":"x"} `,
		`{` + manyKeys(40) + `"model":"m"}`,
	} {
		got, err := All([]byte(body), "model")
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d members, encoding/json has %d", body, len(got), len(want))
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Errorf("%s: %q = %s, encoding/json has %s", body, k, got[k], v)
			}
		}
	}
	for _, n := range []int{1, 15, 16, 17, 40} {
		body := `{` + manyKeys(n) + `"k0":2}`
		if _, err := All([]byte(body), "model"); !isProblem(err, Repeated) {
			t.Errorf("a repeat after %d keys: err = %v", n, err)
		}
		if _, err := MembersValid([]byte(body), "model"); !isProblem(err, Repeated) {
			t.Errorf("MembersValid, a repeat after %d keys: err = %v", n, err)
		}
	}
	if _, err := All([]byte(`[1]`), "model"); !errors.Is(err, ErrNotObject) {
		t.Errorf("an array: err = %v", err)
	}
}

func isProblem(err error, problem string) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && e.Problem == problem
}

// equalFold must be strings.EqualFold, for every key and field; unlikeASCII, which passes over
// the usual field without calling it, never passes over one that an ASCII key equals.
func FuzzEqualFold(f *testing.F) {
	for _, seed := range [][2]string{{"model", "model"}, {"Model", "model"}, {"MODEL", "model"}, {"\u212a", "k"},
		{"max_tokens", "max_Tokens"}, {"ſize", "size"}, {"modeł", "model"}, {"", ""}, {"n", "N"}, {"@", "`"}, {"[", "{"},
		{"k", "\u212a"}, {"sk", "\u017f\u212a"}, {"size", "\u017fize"}, {"ab", "a\u00e9"}, {"abc", "a\u00e9"},
		{"", "a"}, {"a", ""}, {"ab", "a"}, {"kind", "\u212aIND"}, {"size", "SIZE"}, {"Size", "s"},
		{"messages", "max_tokens"}, {"Ms", "mas"}, {"ks", "\u212as"}, {"kS", "k\u017f"}, {"ksk", "k\u017f\u212a"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, key, field string) {
		if got, want := equalFold([]byte(key), asciiOnly(key), field), strings.EqualFold(key, field); got != want {
			t.Fatalf("equalFold(%q, %q) = %v, strings.EqualFold %v", key, field, got, want)
		}
		if asciiOnly(key) && unlikeASCII([]byte(key), field) && strings.EqualFold(key, field) {
			t.Fatalf("unlikeASCII(%q, %q) passes over a key that equals the field in another case", key, field)
		}
	})
}

// Checking a body's keys allocates nothing for its plain keys: only the map of the checked
// members (and its first group) is made, however many keys the object has.
func TestMembersAllocations(t *testing.T) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream":true,"temperature":0.2,"max_tokens":300}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Members(body, "model", "max_tokens", "max_completion_tokens", "n", "size", "quality"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("%.0f allocations, want at most 2", allocs)
	}
}

func TestMembersOfAllocatesNothing(t *testing.T) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"stream":true,"temperature":0.2,"max_tokens":300}`)
	fields := []string{"model", "max_tokens", "max_completion_tokens", "n", "size", "quality"}
	var found [6]json.RawMessage
	allocs := testing.AllocsPerRun(100, func() {
		if err := MembersOf(body, fields, found[:]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 || string(found[0]) != `"gpt-4o-mini"` || string(found[1]) != "300" || found[2] != nil {
		t.Errorf("%.0f allocations, found %q", allocs, found)
	}
}

// equalFold's shortcut for fields of another length never hides a fold: an ASCII key still equals
// a field spelled with the Kelvin sign or the long s, in any position, and nothing else.
func TestEqualFoldShortcutKeepsMultibyteFolds(t *testing.T) {
	for _, c := range []struct {
		key, field string
		want       bool
	}{
		{"kind", "\u212Aind", true}, {"KIND", "\u212Aind", true}, {"mask", "ma\u017Fk", true},
		{"sk", "\u017F\u212A", true}, {"kind", "mind", false}, {"kind", "\u212Ainds", false},
		{"mind", "\u212Aind", false}, {"", "\u212A", false}, {"model", "models", false},
		{"kink", "\u212Ain\u212A", true}, {"kins", "\u212Ain\u017F", true}, {"kinx", "\u212Ain\u212A", false}, {"kind", "\u212Aine", false},
	} {
		if got := equalFold([]byte(c.key), true, c.field); got != c.want {
			t.Errorf("equalFold(%q, %q) = %v, want %v", c.key, c.field, got, c.want)
		}
	}
}

// FuzzMembersOfFields holds MembersOfFields to MembersOf: the same values and the same error for
// any data, with lists of ASCII fields (compared by length) and lists with a field past ASCII
// (compared one by one), fields of 63 bytes and more, an empty field and a repeated one.
func FuzzMembersOfFields(f *testing.F) {
	long := strings.Repeat("a", 70)
	lists := [][]string{
		{"model"},
		{"model", "max_tokens", "n", "size", "ratio", "seconds", "duration", "_method"},
		{"model", "model", "", "Model", long, long[:63], long[:64]},
		{"model", "ſize", "\u212aey", "size", "key"},
	}
	for _, seed := range []string{
		`{"model":"a","messages":[]}`, `{"MODEL":1}`, `{"ratio":1,"RATIO":2}`, `{"size":1,"ſize":2}`, `{"Key":1}`,
		`{"` + long + `":1}`, `{"` + strings.ToUpper(long[:63]) + `":1}`, `{"":1}`, `{"duration":1,"Duration":2}`,
		`{"model":1,"model":2}`, `{"mod\u0065l":1}`, `{"model":1`, `[]`, `{"_METHOD":1}`, `{"k":1,"\u212aey":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, names := range lists {
			want := make([]json.RawMessage, len(names))
			wantErr := MembersOf(data, names, want)
			got := make([]json.RawMessage, len(names))
			for i := range got {
				got[i] = []byte("stale")
			}
			gotErr := MembersOfFields(data, NewFields(names...), got)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("fields %q: MembersOfFields says %v, MembersOf %v", names, gotErr, wantErr)
			}
			for i := range names {
				if !bytes.Equal(got[i], want[i]) || (got[i] == nil) != (want[i] == nil) {
					t.Fatalf("fields %q: %s is %q, MembersOf found %q", names, names[i], got[i], want[i])
				}
			}
		}
	})
}
