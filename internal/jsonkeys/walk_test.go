package jsonkeys

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestWalkVisitsEveryObjectWithItsPath(t *testing.T) {
	body := `{"a":[{"b":1},[{"c":{"d":null}}]],"e":{"f":"x"},"g":[1,"}",{}]}`
	var got []string
	err := Walk([]byte(body), func(path *Path, members []Member) error {
		var keys []string
		for _, m := range members {
			keys = append(keys, m.Key+"="+string(m.Value))
		}
		got = append(got, path.String()+":"+strings.Join(keys, ","))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`a[0]:b=1`, `a[1][0].c:d=null`, `a[1][0]:c={"d":null}`, `e:f="x"`, `g[2]:`,
		`:a=[{"b":1},[{"c":{"d":null}}]],e={"f":"x"},g=[1,"}",{}]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("visited\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestWalkRefusesNestedSmuggling(t *testing.T) {
	for _, tc := range []struct{ body, problem, field string }{
		{`{"a":[{"id":"x","id":"y"}]}`, Repeated, "a[0].id"},
		{`{"a":{"id":"x","\u0069d":"y"}}`, Repeated, "a.id"},
		{`{"a":{"i\u0000d":"y"}}`, Unclear, "a.i\x00d"},
		{`{"a":[1,{"b":{` + manyKeys(20) + `"k":1,"k":2}}]}`, Repeated, "a[1].b.k"},
	} {
		err := Walk([]byte(tc.body), func(*Path, []Member) error { return nil })
		var e *Error
		if !errors.As(err, &e) || e.Problem != tc.problem || e.Field != tc.field {
			t.Errorf("%s: %v, want %s at %q", tc.body, err, tc.problem, tc.field)
		}
	}
	if err := Walk([]byte(strings.Repeat("[", MaxWalkDepth+1)+strings.Repeat("]", MaxWalkDepth+1)), func(*Path, []Member) error { return nil }); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("deep: %v", err)
	}
	if err := Walk([]byte(`{"a":`), func(*Path, []Member) error { return nil }); !errors.Is(err, ErrNotObject) {
		t.Fatalf("invalid: %v", err)
	}
}

// FuzzWalk checks that Walk never panics, and that every value it hands out is valid JSON.
func FuzzWalk(f *testing.F) {
	f.Add(`{"a":[{"b":1},[{"c":{"d":null}}]]}`)
	f.Add(`[{"x":"\u0069"},{"y":[[],{}]}]`)
	f.Fuzz(func(t *testing.T, body string) {
		err := Walk([]byte(body), func(path *Path, members []Member) error {
			for _, m := range members {
				if !json.Valid(m.Value) {
					t.Fatalf("%s.%s: %q is not JSON", path, m.Key, m.Value)
				}
			}
			return nil
		})
		if err == nil && !json.Valid([]byte(body)) {
			t.Fatalf("accepted invalid %q", body)
		}
	})
}

// manyKeys returns n distinct members, enough that Walk keeps a set of the keys.
func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
	}
	return b.String()
}

// BenchmarkWalk compares a walk that validates the body first with one of a body already
// validated (what the router's reference check does), on a responses body of about 2 KiB.
func BenchmarkWalk(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","previous_response_id":"resp_1","input":[` +
		strings.Repeat(`{"type":"message","role":"user","content":[{"type":"input_text","text":"Describe this picture in detail."},{"type":"input_file","file_id":"file-abc"}]},`, 12) +
		`{"type":"item_reference","id":"msg_1"}],"tools":[{"type":"code_interpreter","container":"cntr_1"}]}`)
	visit := func(*Path, []Member) error { return nil }
	for _, bc := range []struct {
		name string
		walk func([]byte, Visit) error
	}{{"Walk", Walk}, {"WalkValid", WalkValid}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := bc.walk(body, visit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
