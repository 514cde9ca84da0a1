package jsonkeys

import (
	"encoding/json"
	"testing"
)

func TestInteger(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int64
		ok   bool
	}{
		{"5", 5, true}, {" -1 ", -1, true}, {"0", 0, true}, {"-0", 0, true}, {"-0.0", 0, true},
		{"5.0", 5, true}, {"5e0", 5, true}, {"5E+0", 5, true}, {"0.5e1", 5, true}, {"2.9e1", 29, true},
		{"4294967295", 4294967295, true}, {"4294967295.000", 4294967295, true}, {"42e-1", 0, false},
		{"420e-1", 42, true}, {"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true}, {"9223372036854775808", 0, false},
		{"0e99999999999", 0, true}, {"0.000e-5", 0, true}, {"1e19", 0, false}, {"1e18", 1e18, true},
		// Not whole, though float64 rounds them to whole numbers.
		{"5.0000000000000000001", 0, false}, {"1e-400", 0, false}, {"29.0000000000000000001", 0, false},
		{"1e400", 0, false}, {"1e99999999999", 0, false},
		// Not JSON numbers.
		{"5.5", 0, false}, {`"5"`, 0, false}, {"05", 0, false}, {"5.", 0, false}, {".5", 0, false},
		{"+5", 0, false}, {"5e", 0, false}, {"5e+", 0, false}, {"5e+-1", 0, false}, {"0x10", 0, false},
		{"", 0, false}, {"-", 0, false}, {"true", 0, false}, {"null", 0, false}, {"1 2", 0, false},
		{"Infinity", 0, false}, {"NaN", 0, false},
	} {
		got, ok := Integer([]byte(tc.raw))
		if got != tc.want || ok != tc.ok {
			t.Errorf("Integer(%q) = %d, %v; want %d, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
		if ok && !json.Valid([]byte(tc.raw)) {
			t.Errorf("Integer(%q) accepted what is not JSON", tc.raw)
		}
	}
}

// FuzzInteger checks Integer against encoding/json: whatever it accepts is a JSON number that
// decodes into an int64 of the same value when written plainly.
func FuzzInteger(f *testing.F) {
	for _, s := range []string{"5", "5.0", "1e3", "-0", "2.9e1", "1e-400", "5.0000000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := Integer([]byte(s))
		if !ok {
			return
		}
		var num json.Number
		if json.Unmarshal([]byte(s), &num) != nil {
			t.Fatalf("Integer(%q) = %d, but it is not a JSON number", s, n)
		}
		if f, err := num.Float64(); err == nil && f != float64(n) {
			t.Fatalf("Integer(%q) = %d, but its value is %v", s, n, f)
		}
	})
}
