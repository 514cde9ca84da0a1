package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Money is an amount of the gateway's one currency, in micro-units: 1_000_000 is one unit
// ("1"), 1 is "0.000001". It is printed and read as a decimal string with at most six decimals,
// in JSON as well (a JSON number is read by its digits, never through a float).
type Money int64

// Micro is the number of micro-units in one unit of money (and in a multiplier of 1).
const Micro = 1_000_000

// ParseMoney reads a decimal string such as "12.345678", "0.4", "-3" or "+1.5". More than six
// decimals, exponents, spaces and amounts beyond ±9,223,372,036,854 are errors.
func ParseMoney(s string) (Money, error) {
	n, err := parseMicro(s)
	return Money(n), err
}

// String prints m as a decimal string without trailing zeros: "0.4", "12", "-0.000001".
func (m Money) String() string { return formatMicro(int64(m)) }

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

var errDecimal = errors.New("want a decimal number with at most 6 decimals, such as 0.40 or 12.345678")

// parseMicro reads a decimal string into millionths, exactly.
func parseMicro(s string) (int64, error) {
	digits := s
	neg := false
	if strings.HasPrefix(digits, "-") || strings.HasPrefix(digits, "+") {
		neg, digits = digits[0] == '-', digits[1:]
	}
	whole, frac, hasDot := strings.Cut(digits, ".")
	if whole == "" && frac == "" || len(frac) > 6 || hasDot && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return 0, fmt.Errorf("amount %q: %w", s, errDecimal)
	}
	w := int64(0)
	if whole != "" {
		var err error
		if w, err = strconv.ParseInt(whole, 10, 64); err != nil || w > math.MaxInt64/Micro-1 {
			return 0, fmt.Errorf("amount %q is too large", s)
		}
	}
	f := int64(0)
	if frac != "" {
		// Six digits at most: no overflow.
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	n := w*Micro + f
	if neg {
		n = -n
	}
	return n, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// formatMicro prints millionths as a decimal string without trailing zeros.
func formatMicro(n int64) string {
	sign := ""
	u := uint64(n)
	if n < 0 {
		sign, u = "-", uint64(-n) // -MinInt64 wraps to itself, which uint64 reads correctly
	}
	whole, frac := u/Micro, u%Micro
	if frac == 0 {
		return sign + strconv.FormatUint(whole, 10)
	}
	f := strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	return sign + strconv.FormatUint(whole, 10) + "." + f
}

// unmarshalMicro reads a JSON string or number as millionths.
func unmarshalMicro(b []byte) (int64, error) {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, err
		}
	} else {
		s = string(b)
	}
	return parseMicro(s)
}
