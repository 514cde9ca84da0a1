package csvtext

import "testing"

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "",
		"acme":                       "acme",
		"invoice 7":                  "invoice 7",
		"=cmd|' /C calc'!A0":         "'=cmd|' /C calc'!A0",
		"+1+1":                       "'+1+1",
		"-2+3":                       "'-2+3",
		"@SUM(A1)":                   "'@SUM(A1)",
		"\t=1":                       "'\t=1",
		"\r=1":                       "'\r=1",
		"\n=1":                       "'\n=1",
		"  =HYPERLINK(\"http://x\")": "'  =HYPERLINK(\"http://x\")",
		"\u00a0=1":                   "'\u00a0=1",
		"＝1+1":                       "'＝1+1",
		"a=b":                        "a=b",
		"key_01-x":                   "key_01-x",
		"'already quoted":            "'already quoted",
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzCell(f *testing.F) {
	for _, s := range []string{"", "=1", " +x", "ok", "\t@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Cell(s)
		if got != s && got != "'"+s {
			t.Fatalf("Cell(%q) = %q: only a leading apostrophe may be added", s, got)
		}
		if Cell(got) != got && got != s {
			t.Fatalf("Cell is not stable on %q", got)
		}
	})
}
