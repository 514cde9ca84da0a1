package percent

import (
	"strings"
	"testing"
)

// Contains finds what Decode would show, and nothing else.
func TestContains(t *testing.T) {
	for _, tc := range []struct {
		s, sub string
		want   bool
	}{
		{"a=mg-key", "mg-key", true},
		{"a=%6Dg%2dkey&b", "mg-key", true},
		{"a=%6dg%2Dkey", "mg-key", true},
		{"a=%6Xg-key", "mg-key", false},
		{"a=mg-ke", "mg-key", false},
		{"%", "mg-key", false},
		{"mg-ke%7", "mg-key", false},
		{"x%79", "y", true},
	} {
		if got := Contains(tc.s, tc.sub); got != tc.want || got != strings.Contains(Decode(tc.s), tc.sub) {
			t.Errorf("Contains(%q, %q) = %v, want %v", tc.s, tc.sub, got, tc.want)
		}
	}
}

func FuzzContains(f *testing.F) {
	f.Add("a=%6Dg%2dkey", "mg-key")
	f.Fuzz(func(t *testing.T, s, sub string) {
		if sub == "" {
			return
		}
		if Contains(s, sub) != strings.Contains(Decode(s), sub) {
			t.Errorf("Contains(%q, %q) = %v", s, sub, Contains(s, sub))
		}
	})
}
