package storage

import (
	"strings"
	"testing"
)

func TestCheckAccountName(t *testing.T) {
	for _, ok := range []string{"acme", "team-1.prod", "<script>alert(1)</script>", "café", "\u00e9quipe", "org/team", "東京 team", "a b", strings.Repeat("a", MaxAccountName)} {
		if err := CheckAccountName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "  ", "a\x00b", "a\nb", "a\tb", "\x7f", "a\u0085b", strings.Repeat("a", MaxAccountName+1), "\xff",
		" acme", "acme ", "acme\u00a0", "ac\u200bme", "\ufeffacme", "gam\u202eemca", "a\u2066b\u2069", "ac\u00adme", "a\u2028b", "a\u2029b"} {
		if CheckAccountName(bad) == nil || CheckNewAccountName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// Not in NFC: refused as a new account's name only.
	for _, old := range []string{"e\u0301quipe", "\u212b"} {
		if CheckAccountName(old) != nil || CheckNewAccountName(old) == nil {
			t.Errorf("%q: CheckAccountName %v, CheckNewAccountName %v", old, CheckAccountName(old), CheckNewAccountName(old))
		}
	}
}
