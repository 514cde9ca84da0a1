package jsonkeys

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestSetMember: the members named key get value, spliced in, every other byte kept; a member
// is added last when absent (with Add); an object whose member already has the value is returned
// itself; what is not one JSON object, a missing member without Add, or a value Replaces refuses
// is an error.
func TestSetMember(t *testing.T) {
	isString := func(old []byte) bool { return old[0] == '"' }
	for _, c := range []struct {
		in, want string
		edit     MemberEdit
		err      error
	}{
		{in: `{"model":"a","x":1}`, want: `{"model":"b","x":1}`},
		{in: ` { "x" : [1, {"model":"a"}] , "model" :  "a"  } `, want: ` { "x" : [1, {"model":"a"}] , "model" :  "b"  } `},
		{in: `{"m\u006fdel":"a"}`, want: `{"m\u006fdel":"b"}`},
		{in: `{"model":"a","model":"c"}`, want: `{"model":"b","model":"b"}`},
		{in: `{"Model":"a","model":1.50}`, want: `{"Model":"a","model":"b"}`},
		{in: `{"model":"b"}`, want: `{"model":"b"}`},
		{in: `{"x":"\u00e9"}`, want: `{"x":"\u00e9","model":"b"}`, edit: MemberEdit{Add: true}},
		{in: `{"x":1 }`, want: `{"x":1,"model":"b" }`, edit: MemberEdit{Add: true}},
		{in: ` { } `, want: ` { "model":"b"} `, edit: MemberEdit{Add: true}},
		{in: `{"x":1}`, err: ErrNoMember},
		{in: `{"model":1}`, edit: MemberEdit{Replaces: isString}, err: ErrMemberValue},
		{in: `{"model":"a"}`, want: `{"model":"b"}`, edit: MemberEdit{Replaces: isString}},
		{in: `[]`, err: ErrNotObject},
		{in: `{"model":"a"`, err: ErrNotObject},
		{in: `{"model":"a",}`, err: ErrNotObject},
		{in: `{"model":"a"} {}`, err: ErrNotObject},
		{in: `{"model" "a"}`, err: ErrNotObject},
		{in: `{"model":tru}`, err: ErrNotObject},
		{in: ``, err: ErrNotObject},
	} {
		in := []byte(c.in)
		got, err := SetMember(in, "model", []byte(`"b"`), c.edit)
		if err != c.err || string(got) != c.want {
			t.Errorf("SetMember(%s) = %s, %v; want %s, %v", c.in, got, err, c.want, c.err)
		}
		if err == nil && (c.in == c.want) != (&got[0] == &in[0]) {
			t.Errorf("SetMember(%s): copied %v, want a copy only when something changed", c.in, &got[0] != &in[0])
		}
	}
}

// FuzzSetMember: whatever the object, the result is valid JSON whose member is the value (once
// decoded), and the input is never written to.
func FuzzSetMember(f *testing.F) {
	f.Add([]byte(`{"model":"a","n":[1,2,{"model":"x"}]}`), true)
	f.Add([]byte(`{"stream_options":{"include_usage":false}, "model" : "a" }`), false)
	f.Add([]byte(`{}`), true)
	f.Fuzz(func(t *testing.T, data []byte, add bool) {
		before := bytes.Clone(data)
		out, err := SetMember(data, "model", []byte(`{"v":true}`), MemberEdit{Add: add})
		if !bytes.Equal(data, before) {
			t.Fatalf("SetMember wrote to its input %q", before)
		}
		if err != nil {
			if err != ErrNoMember && json.Valid(data) && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
				t.Fatalf("SetMember(%q) refused a JSON object: %v", data, err)
			}
			return
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal(out, &v); err != nil || string(v["model"]) != `{"v":true}` {
			t.Fatalf("SetMember(%q) = %q: not an object with the member (%v)", data, out, err)
		}
	})
}
