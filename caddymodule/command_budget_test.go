package caddymodule

import (
	"fmt"
	"testing"
)

// TestParseBudgetFlag: --budget takes an amount, optionally per day or month, as the Caddyfile's
// budget does; anything else is refused with the form to write.
func TestParseBudgetFlag(t *testing.T) {
	for in, want := range map[string]string{
		"25.50/month": "map[amount:25.5 period:month]",
		"4/day":       "map[amount:4 period:day]",
		"0.000001":    "map[amount:0.000001]",
	} {
		got, err := parseBudgetFlag(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("--budget %s = %v, %v; want %s", in, got, err, want)
		}
	}
	// "+5" is an amount as the price parser reads it, not as an operator enters one: refused,
	// as a credit's "+5" is (money.ParseEntered).
	for _, bad := range []string{"0", "-1/day", "5/week", "1.0000001", "abc", "5/", "+5", "+5/month", "-0"} {
		if _, err := parseBudgetFlag(bad); err == nil {
			t.Errorf("--budget %s was accepted", bad)
		}
	}
}
