package passthrough

import (
	"fmt"
	"testing"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// TestBodyFieldsAnswerEachCheckedName: with names that fit in the struct and with more, each
// present name gives its raw value, an absent or unchecked one nothing; a key that differs from
// a name only by case is refused either way.
func TestBodyFieldsAnswerEachCheckedName(t *testing.T) {
	for _, n := range []int{3, 12, 13, 20, 24, 25, 40} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprint("f", i)
		}
		body := fmt.Sprintf(`{"f0":"a","f%d":[1,2],"other":true}`, n-1)
		f, err := readFields([]byte(body), names)
		if err != nil {
			t.Fatal(err)
		}
		first, ok0 := f.get("f0")
		last, okLast := f.get(names[n-1])
		_, ok1 := f.get("f1")
		_, okOther := f.get("other")
		if string(first) != `"a"` || !ok0 || string(last) != "[1,2]" || !okLast || ok1 || okOther || f.value("f1") != nil {
			t.Errorf("%d names: f0 %q %v, last %q %v, f1 %v, other %v", n, first, ok0, last, okLast, ok1, okOther)
		}
		want, err := jsonkeys.Members([]byte(body), names...)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names { // every name, as jsonkeys finds it
			if v, ok := f.get(name); string(v) != string(want[name]) || ok != (want[name] != nil) {
				t.Errorf("%d names: %s is %q %v, jsonkeys finds %q", n, name, v, ok, want[name])
			}
		}
		if _, err := readFields([]byte(`{"F0":1}`), names); err == nil {
			t.Errorf("%d names: a case variant of f0 was accepted", n)
		}
	}
}

// TestBodyFieldsReadAgain: a bodyFields read again (as findModel's one variable is by whichever
// case reads the body) holds the second body's fields only, whichever of the two kept its values
// in the struct.
func TestBodyFieldsReadAgain(t *testing.T) {
	many := make([]string, 30)
	for i := range many {
		many[i] = fmt.Sprint("f", i)
	}
	var f bodyFields
	if err := f.read([]byte(`{"f0":1,"f29":2}`), many); err != nil {
		t.Fatal(err)
	}
	if err := f.read([]byte(`{"f1":3}`), many[:2]); err != nil {
		t.Fatal(err)
	}
	if v, ok := f.get("f1"); string(v) != "3" || !ok || f.value("f0") != nil || f.value("f29") != nil {
		t.Errorf("after a second read: f1 %q, f0 %q, f29 %q", v, f.value("f0"), f.value("f29"))
	}
	if err := f.read([]byte(`{"f29":4}`), many); err != nil {
		t.Fatal(err)
	}
	if f.value("f29") == nil || f.value("f1") != nil {
		t.Errorf("after a third read: f29 %q, f1 %q", f.value("f29"), f.value("f1"))
	}
}

// TestEveryEndpointsFieldsFitInBodyFields: the checked fields of every endpoint, the built-in
// ones and an operator's of each kind, are read without an allocation for their values.
func TestEveryEndpointsFieldsFitInBodyFields(t *testing.T) {
	eps := append([]Endpoint{}, Capabilities...)
	for _, path := range []string{"/v1/moderations", "/v2/responses", "/v1/chat/x", "/v1/messages/batches", "/v1/images/x", "/v1/models/{model}:x"} {
		ep, err := ParseEndpoint("POST", path)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	for _, ep := range eps {
		names := refFields(ep)
		var f bodyFields
		if allocs := testing.AllocsPerRun(10, func() {
			if err := f.read(body, names); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 || len(names) > len(f.few) {
			t.Errorf("%s %s: %d fields, %v allocations to read them", ep.Method, ep.Path, len(names), allocs)
		}
	}
}
