package storage

import (
	"strings"
	"testing"
)

func TestCheckAccountName(t *testing.T) {
	for _, ok := range []string{"acme", "team-1.prod", "<script>alert(1)</script>", "café", "org/team", strings.Repeat("a", MaxAccountName)} {
		if err := CheckAccountName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "  ", "a\x00b", "a\nb", "a\tb", "\x7f", "a\u0085b", strings.Repeat("a", MaxAccountName+1), "\xff"} {
		if CheckAccountName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
