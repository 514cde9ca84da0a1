package jsonkeys

import (
	"strconv"
	"strings"
)

// Integer reads raw, a JSON value, as an exact integer: a JSON number whose value is a whole
// number, however it is written (5, 5.0, 5e0, 0.5e1, -0), that fits an int64. A number whose
// value is not whole is not one, even where float64 would round it to a whole number
// (5.0000000000000000001, 1e-400); neither is a string, nor anything that is not a JSON number.
// JSON white space around it is allowed.
func Integer(raw []byte) (int64, bool) {
	s := strings.Trim(string(raw), " \t\n\r") // JSON's white space
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	// The integer part: 0, or a digit 1-9 then digits (JSON allows no leading zero).
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || s[0] == '0' && i > 1 {
		return 0, false
	}
	digits, rest := s[:i], s[i:]
	exp := 0
	if strings.HasPrefix(rest, ".") {
		j := 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 1 {
			return 0, false
		}
		digits += rest[1:j]
		exp -= j - 1
		rest = rest[j:]
	}
	if rest != "" {
		// The exponent: e or E, an optional sign, then digits.
		if rest[0] != 'e' && rest[0] != 'E' {
			return 0, false
		}
		e := rest[1:]
		if e != "" && (e[0] == '+' || e[0] == '-') {
			e = e[1:]
		}
		if e == "" || strings.TrimLeft(e, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.Atoi(rest[1:])
		if err != nil || n > 1<<20 || n < -(1<<20) {
			// Far past int64 either way: a whole number too large, or a fraction, unless
			// the digits are all zeros, which is 0.
			return 0, strings.Trim(digits, "0") == ""
		}
		exp += n
	}
	// The value is digits × 10^exp. Trailing zeros of the digits move into the exponent.
	digits = strings.TrimLeft(digits, "0")
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return 0, true
	}
	if exp < 0 || len(digits)+exp > 19 {
		return 0, false // a fraction, or more digits than an int64 holds
	}
	if neg {
		digits = "-" + digits
	}
	n, err := strconv.ParseInt(digits+strings.Repeat("0", exp), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
