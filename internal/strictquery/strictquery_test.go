package strictquery

import "testing"

func TestRead(t *testing.T) {
	for _, c := range []struct {
		raw, want string
	}{
		{"account=acme&from=2026-11-01", ""},
		{"group_by=day&group_by=model", ""}, // not among once
		{"account=%zz", "the query does not decode: invalid URL escape \"%zz\""},
		{"account=acme;from=2026-11-01", "the query does not decode: invalid semicolon separator in query"},
		{"account=acme&account=globex", "account is given more than once in the query; give it once"},
		{"from=1&to=2&from=3", "from is given more than once in the query; give it once"},
	} {
		v, err := Read(c.raw, "account", "from", "to")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Read(%q): %v", c.raw, err)
		case c.want == "" && v == nil:
			t.Errorf("Read(%q): no values", c.raw)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("Read(%q) = %v; want %q", c.raw, err, c.want)
		}
	}
}
