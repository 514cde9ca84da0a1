// Package money reads and prints amounts of the gateway's currency. An amount is an int64
// count of micro-units (1 unit = 1_000_000 micro-units) and is written as a decimal string
// with at most six decimals: "12.5", "-0.000001", "3". No floating point is involved
// anywhere: parsing and printing work on the digits.
package money

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Unit is one unit of the currency in micro-units.
const Unit int64 = 1_000_000

// Decimals is the number of decimals an amount may carry.
const Decimals = 6

// ErrSyntax is wrapped by every error Parse returns for text that is not an amount.
var ErrSyntax = errors.New("not a decimal amount")

// ErrRange is wrapped by the error Parse returns for an amount that does not fit in int64
// micro-units (about ±9.2 trillion units).
var ErrRange = errors.New("amount out of range")

// Parse reads a decimal amount into micro-units. It accepts an optional leading '-' or '+',
// digits, and optionally a '.' followed by one to six digits. It refuses everything else:
// exponents, spaces, grouping separators, a bare ".5" or "5.", more than six decimals, and
// amounts beyond int64.
func Parse(s string) (int64, error) {
	text := s
	negative := false
	if text != "" && (text[0] == '-' || text[0] == '+') {
		negative = text[0] == '-'
		text = text[1:]
	}
	whole, frac, hasPoint := strings.Cut(text, ".")
	if whole == "" || !allDigits(whole) {
		return 0, fmt.Errorf("%w: %q", ErrSyntax, s)
	}
	if hasPoint && (frac == "" || !allDigits(frac)) {
		return 0, fmt.Errorf("%w: %q", ErrSyntax, s)
	}
	if len(frac) > Decimals {
		return 0, fmt.Errorf("%w: %q has more than %d decimals", ErrSyntax, s, Decimals)
	}
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > 19 {
		return 0, fmt.Errorf("%w: %q", ErrRange, s)
	}
	var units uint64
	if whole != "" {
		var err error
		units, err = strconv.ParseUint(whole, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q", ErrRange, s)
		}
	}
	var micros uint64
	if frac != "" {
		padded := frac + strings.Repeat("0", Decimals-len(frac))
		parsed, err := strconv.ParseUint(padded, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q", ErrSyntax, s)
		}
		micros = parsed
	}
	// The magnitude may reach 2^63 only for a negative amount (math.MinInt64).
	limit := uint64(math.MaxInt64)
	if negative {
		limit++
	}
	if units > (limit-micros)/uint64(Unit) {
		return 0, fmt.Errorf("%w: %q", ErrRange, s)
	}
	magnitude := units*uint64(Unit) + micros
	if negative {
		return int64(-magnitude), nil // two's complement: -(2^63) wraps to MinInt64 as wanted
	}
	return int64(magnitude), nil
}

// Format prints micro-units as a decimal string: the whole units, then a '.' and the
// decimals without trailing zeros when there are any. Format(12345678) is "12.345678",
// Format(2_500_000) is "2.5", Format(-1) is "-0.000001", Format(0) is "0".
// Parse(Format(x)) == x for every int64.
func Format(micros int64) string {
	var buf [24]byte // the longest, MinInt64, is 21 bytes
	return string(appendFormat(buf[:0], micros))
}

// appendFormat appends Format(micros) to dst.
func appendFormat(dst []byte, micros int64) []byte {
	magnitude := uint64(micros)
	if micros < 0 {
		dst = append(dst, '-')
		magnitude = -magnitude // two's complement negation, right for MinInt64 too
	}
	dst = strconv.AppendUint(dst, magnitude/uint64(Unit), 10)
	rest := magnitude % uint64(Unit)
	if rest == 0 {
		return dst
	}
	digits := Decimals
	for rest%10 == 0 {
		rest /= 10
		digits--
	}
	dst = append(dst, ".000000"[:1+digits]...)
	for i := len(dst) - 1; rest > 0; i-- {
		dst[i] = byte('0' + rest%10)
		rest /= 10
	}
	return dst
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParseEntered reads an amount as an operator enters one (a credit through the admin API, the
// console or the CLI): Parse, but written only as -?digits(.digits{1,6})?, so without a '+' and
// without a '-' on an amount of zero ("-0", "-0.00"). The amount acted on is then exactly the
// one typed: "+5" would be a credit of 5 that the ledger prints as "5", and "-0" a credit of
// nothing that reads as an adjustment. Its errors wrap ErrSyntax or ErrRange, as Parse's.
func ParseEntered(s string) (int64, error) {
	if strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("%w: %q has a '+' sign; write the amount without it", ErrSyntax, s)
	}
	micros, err := Parse(s)
	if err == nil && micros == 0 && strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%w: %q is zero with a '-' sign; write 0", ErrSyntax, s)
	}
	return micros, err
}
