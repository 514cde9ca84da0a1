package money

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"12.345678", 12_345_678},
		{"12.5", 12_500_000},
		{"3", 3_000_000},
		{"-0.000001", -1},
		{"+1.000001", 1_000_001},
		{"007.10", 7_100_000},
		{"-0", 0},
		{"9223372036854.775807", math.MaxInt64},
		{"-9223372036854.775808", math.MinInt64},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", ErrSyntax},
		{"-", ErrSyntax},
		{".5", ErrSyntax},
		{"5.", ErrSyntax},
		{"1e3", ErrSyntax},
		{"1.2.3", ErrSyntax},
		{" 1", ErrSyntax},
		{"1,000", ErrSyntax},
		{"0x10", ErrSyntax},
		{"1.0000001", ErrSyntax},
		{"NaN", ErrSyntax},
		{"--1", ErrSyntax},
		{"1.-5", ErrSyntax},
		{"9223372036854.775808", ErrRange},
		{"-9223372036854.775809", ErrRange},
		{"99999999999999999999999", ErrRange},
	} {
		got, err := Parse(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("Parse(%q) = %d, %v; want an error wrapping %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{12_345_678, "12.345678"},
		{2_500_000, "2.5"},
		{-1, "-0.000001"},
		{-1_500_000, "-1.5"},
		{1_000_000, "1"},
		{10, "0.00001"},
		{750, "0.00075"},
		{1_000_001, "1.000001"},
		{-120_000, "-0.12"},
		{999_999, "0.999999"},
		{math.MaxInt64, "9223372036854.775807"},
		{math.MinInt64, "-9223372036854.775808"},
	} {
		if got := Format(tc.in); got != tc.want {
			t.Errorf("Format(%d) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParse checks that whatever Parse accepts prints back to an amount that parses to the
// same micro-units, and that Format always prints what Parse reads back.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"0", "12.345678", "-0.000001", "1e3", "9223372036854.775807", ".5", "+7.1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		micros, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrRange) {
				t.Fatalf("Parse(%q) error %v wraps neither ErrSyntax nor ErrRange", s, err)
			}
			return
		}
		printed := Format(micros)
		again, err := Parse(printed)
		if err != nil || again != micros {
			t.Fatalf("Parse(%q) = %d; Format gives %q which parses to %d, %v", s, micros, printed, again, err)
		}
	})
}

// FuzzFormat checks the round trip from micro-units.
func FuzzFormat(f *testing.F) {
	for _, seed := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1_000_000} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, micros int64) {
		printed := Format(micros)
		back, err := Parse(printed)
		if err != nil || back != micros {
			t.Fatalf("Format(%d) = %q; Parse gives %d, %v", micros, printed, back, err)
		}
		if strings.Contains(printed, ".") && strings.HasSuffix(printed, "0") {
			t.Fatalf("Format(%d) = %q ends with a zero decimal", micros, printed)
		}
	})
}

// BenchmarkFormat prints a usage record's amount (one allocation: the string).
func BenchmarkFormat(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		printed = Format(750)
	}
}

var printed string // where BenchmarkFormat keeps the result, which escapes as in a log field
