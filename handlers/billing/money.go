package billing

import (
	"encoding/json"
	"fmt"

	"github.com/mediagw/mediagw/internal/money"
)

// Money is an amount of the gateway's one currency, in micro-units: 1_000_000 is one unit
// ("1"), 1 is "0.000001". It is printed and read as a decimal string with at most six decimals,
// in JSON as well (a JSON number is read by its digits, never through a float).
type Money int64

// Micro is the number of micro-units in one unit of money (and in a multiplier of 1).
const Micro = 1_000_000 // money.Unit, untyped so that it multiplies Money and Multiplier alike

// ParseMoney reads a decimal string such as "12.345678", "0.4", "-3" or "+1.5". More than six
// decimals, exponents, spaces, a bare ".5" or "5." and amounts beyond int64 micro-units are
// errors.
func ParseMoney(s string) (Money, error) {
	n, err := parseMicro(s)
	return Money(n), err
}

// String prints m as a decimal string without trailing zeros: "0.4", "12", "-0.000001".
func (m Money) String() string { return formatMicro(int64(m)) }

// ParseEntered reads an amount as an operator enters one (a key's budget, in the Caddyfile, the
// admin API or the CLI): ParseMoney, but written only as -?digits(.digits{1,6})?, without a '+'
// and without a '-' on zero (see money.ParseEntered), so that the amount acted on is the one
// typed.
func ParseEntered(s string) (Money, error) {
	n, err := money.ParseEntered(s)
	if err != nil {
		return 0, fmt.Errorf("amount %q: want a decimal number with at most 6 decimals and no sign but a '-' before a negative amount, such as 25.50", s)
	}
	return Money(n), nil
}

// EnteredMoney is an amount an operator enters in the configuration (a key's budget): Money,
// read from JSON (a string, or a number by its digits) as ParseEntered reads it, so "+5" is
// refused there as in the Caddyfile.
type EnteredMoney Money

// String prints e as Money does.
func (e EnteredMoney) String() string { return Money(e).String() }

// MarshalJSON writes e as a JSON string.
func (e EnteredMoney) MarshalJSON() ([]byte, error) { return Money(e).MarshalJSON() }

// UnmarshalJSON reads a JSON string or number as ParseEntered does.
func (e *EnteredMoney) UnmarshalJSON(b []byte) error {
	s, err := jsonAmountText(b)
	if err != nil {
		return err
	}
	m, err := ParseEntered(s)
	*e = EnteredMoney(m)
	return err
}

// MarshalJSON writes m as a JSON string, so that no client reads it into a float.
func (m Money) MarshalJSON() ([]byte, error) { return json.Marshal(m.String()) }

// UnmarshalJSON reads a JSON string or number of at most six decimals.
func (m *Money) UnmarshalJSON(b []byte) error {
	n, err := unmarshalMicro(b)
	*m = Money(n)
	return err
}

// Multiplier is a decimal factor such as 1.5 or 0.25, in millionths (1_000_000 is ×1). Like
// Money it is read and printed as a decimal string of at most six decimals.
type Multiplier int64

// ParseMultiplier reads a non-negative decimal factor such as "1.5".
func ParseMultiplier(s string) (Multiplier, error) {
	n, err := parseMicro(s)
	if err == nil && n < 0 {
		err = fmt.Errorf("multiplier %q is negative", s)
	}
	return Multiplier(n), err
}

// String prints x as a decimal string without trailing zeros.
func (x Multiplier) String() string { return formatMicro(int64(x)) }

// MarshalJSON writes x as a JSON string.
func (x Multiplier) MarshalJSON() ([]byte, error) { return json.Marshal(x.String()) }

// UnmarshalJSON reads a JSON string or number of at most six decimals.
func (x *Multiplier) UnmarshalJSON(b []byte) error {
	n, err := unmarshalMicro(b)
	*x = Multiplier(n)
	return err
}

// parseMicro reads a decimal string into millionths, exactly (see money.Parse).
func parseMicro(s string) (int64, error) {
	n, err := money.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("amount %q: want a decimal number with at most 6 decimals, such as 0.40 or 12.345678", s)
	}
	return n, nil
}

// formatMicro prints millionths as a decimal string without trailing zeros (see money.Format).
func formatMicro(n int64) string { return money.Format(n) }

// unmarshalMicro reads a JSON string or number as millionths.
func unmarshalMicro(b []byte) (int64, error) {
	s, err := jsonAmountText(b)
	if err != nil {
		return 0, err
	}
	return parseMicro(s)
}

// jsonAmountText is the text of a JSON string, or a JSON number's own digits.
func jsonAmountText(b []byte) (string, error) {
	if len(b) > 0 && b[0] == '"' {
		var s string
		err := json.Unmarshal(b, &s)
		return s, err
	}
	return string(b), nil
}
