package billing

import (
	"encoding/json"
	"testing"
)

func TestParseMoney(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Money
		out  string
	}{
		{"0", 0, "0"},
		{"0.4", 400_000, "0.4"},
		{"0.40", 400_000, "0.4"},
		{"12.345678", 12_345_678, "12.345678"},
		{"-0.000001", -1, "-0.000001"},
		{"+3", 3_000_000, "3"},
		{"9223372036853", 9_223_372_036_853_000_000, "9223372036853"},
	} {
		got, err := ParseMoney(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseMoney(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			continue
		}
		if got.String() != tc.out {
			t.Errorf("Money(%d).String() = %q, want %q", got, got.String(), tc.out)
		}
	}
	for _, bad := range []string{"", "-", ".", "1.", "1.2345678", "1e3", " 1", "1,5", "0x10", "--1", "9223372036855", "NaN", ".5"} {
		if got, err := ParseMoney(bad); err == nil {
			t.Errorf("ParseMoney(%q) = %d, want an error", bad, got)
		}
	}
}

func TestMoneyJSON(t *testing.T) {
	var v struct {
		A Money      `json:"a"`
		B Money      `json:"b"`
		M Multiplier `json:"m"`
	}
	if err := json.Unmarshal([]byte(`{"a":"0.25","b":1.5,"m":"0.5"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != 250_000 || v.B != 1_500_000 || v.M != 500_000 {
		t.Fatalf("decoded %+v", v)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"a":"0.25","b":"1.5","m":"0.5"}` {
		t.Fatalf("encoded %s", out)
	}
	if err := json.Unmarshal([]byte(`{"a":0.1234567}`), &v); err == nil {
		t.Fatal("seven decimals were accepted")
	}
	if _, err := ParseMultiplier("-1"); err == nil {
		t.Fatal("a negative multiplier was accepted")
	}
}

// FuzzParseMoney checks that whatever parses prints back to a string that parses to the same
// amount, and that nothing panics.
func FuzzParseMoney(f *testing.F) {
	for _, s := range []string{"0", "12.345678", "-1.5", "9223372036853.999999", "1e5", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMoney(s)
		if err != nil {
			return
		}
		again, err := ParseMoney(m.String())
		if err != nil || again != m {
			t.Fatalf("%q → %d → %q → %d, %v", s, m, m.String(), again, err)
		}
	})
}

// TestEnteredMoney: a key's budget in a JSON config is an entered amount: "+5" and "-0" are
// refused there, as a credit's are, where the price parser (Money) reads "+5" as 5.
func TestEnteredMoney(t *testing.T) {
	for in, want := range map[string]string{`"25.50"`: "25.5", `5`: "5", `"0.000001"`: "0.000001", `"-3"`: "-3"} {
		var e EnteredMoney
		if err := json.Unmarshal([]byte(in), &e); err != nil || e.String() != want {
			t.Errorf("EnteredMoney %s = %s, %v; want %s", in, e, err, want)
		}
		if out, err := json.Marshal(e); err != nil || string(out) != `"`+want+`"` {
			t.Errorf("EnteredMoney %s marshals as %s, %v", in, out, err)
		}
	}
	for _, in := range []string{`"+5"`, `"-0"`, `"-0.00"`, `"5."`, `"1e2"`, `1e2`, `"1.0000001"`} {
		var e EnteredMoney
		if err := json.Unmarshal([]byte(in), &e); err == nil {
			t.Errorf("EnteredMoney %s = %s; want refused", in, e)
		}
	}
	if _, err := ParseEntered("+5"); err == nil {
		t.Error(`ParseEntered("+5") was accepted`)
	}
	if m, err := ParseMoney("+5"); err != nil || m != 5*Micro {
		t.Errorf(`ParseMoney("+5") = %s, %v; a price still reads it`, m, err)
	}
}
