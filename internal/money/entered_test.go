package money

import (
	"errors"
	"regexp"
	"testing"
)

// enteredForm is the one way an operator writes an amount (docs/billing.md, "Crediting an
// account"): -?digits(.digits{1,6})?, and no sign on zero (checked apart).
var enteredForm = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,6})?$`)

// TestParseEntered: a '+' and a '-' on zero are refused; every other amount reads as Parse.
func TestParseEntered(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "5": 5 * Unit, "-0.000001": -1, "0.000000": 0, "12.5": 12_500_000, "-3": -3 * Unit} {
		if got, err := ParseEntered(in); err != nil || got != want {
			t.Errorf("ParseEntered(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"+5", "+0", "-0", "-0.0", "-0.000000", "-00", "+-1", "-+1", "", "-", "1e3"} {
		if got, err := ParseEntered(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseEntered(%q) = %d, %v; want ErrSyntax", in, got, err)
		}
	}
}

// FuzzParseEntered checks that ParseEntered accepts exactly the amounts of enteredForm that are
// not a signed zero and that Parse reads, at Parse's value.
func FuzzParseEntered(f *testing.F) {
	for _, seed := range []string{"0", "-0", "+5", "12.345678", "-0.000001", "-0.000000", "9223372036854.775807"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseEntered(s)
		parsed, perr := Parse(s)
		want := enteredForm.MatchString(s) && perr == nil && !(parsed == 0 && s[0] == '-')
		if (err == nil) != want || err == nil && got != parsed {
			t.Fatalf("ParseEntered(%q) = %d, %v; Parse = %d, %v; the form says %v", s, got, err, parsed, perr, want)
		}
	})
}
