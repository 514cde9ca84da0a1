package passthrough

import (
	"fmt"
	"testing"
)

// TestBodyFieldsAnswerEachCheckedName: with names that fit in the struct and with more, each
// present name gives its raw value, an absent or unchecked one nothing; a key that differs from
// a name only by case is refused either way.
func TestBodyFieldsAnswerEachCheckedName(t *testing.T) {
	for _, n := range []int{3, 12, 13, 20} {
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
		if _, err := readFields([]byte(`{"F0":1}`), names); err == nil {
			t.Errorf("%d names: a case variant of f0 was accepted", n)
		}
	}
}
